// The async context nothing runs in. Anything created while code runs (a promise, a timer, an
// Execution's promises) keeps that code's AsyncLocalStorage stores alive for as long as it lives;
// a run launched from another run's commit outcome would keep that run (its context, its
// Execution) alive, and the next one launched from it the same: a chain through every run of a
// backlog (docs/decisions/0064).
import { AsyncResource } from 'node:async_hooks';

// Created when the module loads, outside any request or workflow.
const ROOT = new AsyncResource('weft.detached');

/** Runs `fn` in the root async context: no caller's stores are read in it or kept by what it creates. */
export function detached<T>(fn: () => T): T {
  return ROOT.runInAsyncScope(fn);
}
