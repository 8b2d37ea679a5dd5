import type { WorkflowClock } from '../common/clock.js';
import { setLongTimeout } from './long-timeout.js';

/** Production's workflow clock: real time, no offset. */
export const systemClock: WorkflowClock = {
  now: () => Date.now(),
  offsetMs: () => 0,
  setTimer: (fn, ms) => setLongTimeout(fn, ms),
};
