// Optional client protocol on stdin, for the chaos harness: one JSON command per line, one JSON
// reply per command on stdout ({"event":"reply","id":...,"ok":true,"value":...} or "ok":false with
// the error's name and message). The engine API is called exactly as a Nest service would call it.
import * as readline from 'node:readline';
import type { WeftEngine } from '@weft/nest';

export interface Command {
  id: number;
  op: 'start' | 'signal' | 'update' | 'query' | 'describe' | 'inspect' | 'cancel' | 'suspend' | 'resume' | 'purge';
  type?: string;
  workflowId: string;
  name?: string;
  payload?: unknown;
  timeoutMs?: number;
  /** start: delayed start (startAfter, ms). */
  startAfterMs?: number;
  /** cancel / suspend: the reason recorded. */
  reason?: string;
}

export type Emit = (event: Record<string, unknown>) => void;

async function execute(engine: WeftEngine, c: Command): Promise<unknown> {
  switch (c.op) {
    case 'start': {
      const delayed = c.startAfterMs === undefined ? {} : { startAfter: c.startAfterMs };
      return (await engine.start(c.type!, c.payload, { workflowId: c.workflowId, ...delayed })).workflowId;
    }
    case 'cancel':
      return engine.cancel(c.workflowId, c.reason);
    case 'suspend':
      return engine.suspend(c.workflowId, c.reason);
    case 'resume':
      return engine.resume(c.workflowId);
    case 'purge':
      return engine.purge(c.workflowId);
    case 'signal':
      return engine.signal(c.workflowId, c.name!, c.payload);
    case 'update':
      return engine.update(c.workflowId, c.name!, c.payload, { timeout: c.timeoutMs ?? 30_000 });
    case 'query':
      return engine.query(c.workflowId, c.name!, c.payload);
    case 'describe':
      return (await engine.describe(c.workflowId)).status;
    case 'inspect':
      return inspect(engine, c.workflowId);
    default:
      throw new Error(`unknown op ${JSON.stringify((c as { op: unknown }).op)}`);
  }
}

type Bag = Record<string, unknown>;
const field = (o: unknown, k: string): unknown => (o as Bag | undefined)?.[k];

/**
 * Diagnostics for the chaos harness: what this engine holds in memory for one workflow. Reads
 * private runtime fields on purpose (debugging aid only; nothing depends on it).
 */
function inspect(engine: WeftEngine, workflowId: string): Bag {
  const runtime = field(engine, 'runtime');
  const exec = (field(runtime, 'live') as Map<string, unknown> | undefined)?.get(workflowId);
  const registry = field(engine.ownership, 'registry') as { held: Map<string, string>; isValid(id: string): boolean } | undefined;
  const committer = field(runtime, 'committer');
  return {
    held: registry?.held.get(workflowId) ?? null,
    validByLocalClock: registry?.isValid(workflowId) ?? null,
    loading: (field(runtime, 'loading') as Map<string, unknown> | undefined)?.has(workflowId) ?? null,
    committer: { inFlight: field(committer, 'inFlight'), queued: (field(committer, 'queue') as unknown[] | undefined)?.length },
    live: exec ? inspectExecution(exec) : null,
  };
}

function inspectExecution(exec: unknown): Bag {
  const waits = (field(exec, 'waits') as Map<number, Bag> | undefined) ?? new Map<number, Bag>();
  const timers = (field(exec, 'timers') as Map<number, Date> | undefined) ?? new Map<number, Date>();
  return {
    state: field(exec, 'state'),
    parked: field(exec, 'parked'),
    waits: [...waits.entries()].map(([seq, w]) => `${seq}:${String(w.kind)}`),
    firedTimers: [...((field(exec, 'firedTimers') as Set<number> | undefined) ?? [])],
    timers: [...timers.entries()].map(([seq, at]) => `${seq}@${at.toISOString()}`),
    nextSeq: field(exec, 'nextSeq'),
    version: field(exec, 'version'),
    epoch: field(exec, 'epoch'),
    inflightSteps: field(exec, 'inflightSteps'),
    replaying: (exec as { isReplaying?: boolean }).isReplaying,
    committing: field(exec, 'committing'),
    queued: (field(exec, 'queue') as unknown[] | undefined)?.length,
    inbox: (field(exec, 'inbox') as unknown[] | undefined)?.length,
    aborted: (field(exec, 'abort') as AbortController | undefined)?.signal.aborted,
  };
}

/** Reads commands until stdin closes; `onClose` runs then (the harness went away). */
export function serveCommands(engine: () => WeftEngine | undefined, emit: Emit, onClose: () => void): void {
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    let c: Command;
    try {
      c = JSON.parse(line) as Command;
    } catch {
      return emit({ event: 'bad-command', line: line.slice(0, 200) });
    }
    const e = engine();
    if (!e) return emit({ event: 'reply', id: c.id, ok: false, error: { name: 'EngineNotReady', message: 'engine not ready' } });
    execute(e, c).then(
      (value) => emit({ event: 'reply', id: c.id, ok: true, value: value ?? null }),
      (err: unknown) => {
        const { name, message } = (err ?? {}) as { name?: string; message?: string };
        emit({ event: 'reply', id: c.id, ok: false, error: { name: name ?? 'Error', message: message ?? String(err) } });
      },
    );
  });
  rl.on('close', onClose);
}
