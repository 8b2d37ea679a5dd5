// The `weft` commands by name. Each one checks its arguments first (a bad one is exit code 2,
// before any connection), then runs against a Session (session.ts).
import type { CommandName } from './args.js';
import { CliUsageError } from './errors.js';
import { hasFilter, type Prepared, type Values } from './options.js';
import { describe, engines, history, list } from './read-commands.js';
import { scheduleDescribe, scheduleList, schedulePause, scheduleTrigger } from './schedule-commands.js';
import { bulkCancel, signal, transition } from './write-commands.js';
import { fork, retry } from './repair-commands.js';

export type { CliIo, Output, Prepared } from './options.js';

function cancel(args: string[], v: Values): Prepared {
  const bulk = hasFilter(v);
  if (args.length && bulk) throw new CliUsageError('Give either a workflow id or --type/--status/--id-prefix/--where filters, not both');
  if (!args.length && !bulk)
    throw new CliUsageError('"weft cancel" needs a workflow id, or --type/--status/--id-prefix/--where for a bulk cancel');
  return bulk ? bulkCancel(v) : transition('cancel', args, v);
}

const PREPARE: Record<CommandName, (args: string[], v: Values) => Prepared> = {
  list: (_, v) => list(v),
  describe: (args) => describe(args),
  history,
  signal,
  cancel,
  suspend: (args, v) => transition('suspend', args, v),
  resume: (args, v) => transition('resume', args, v),
  retry,
  fork,
  engines: (_, v) => engines(v),
  'schedules list': (_, v) => scheduleList(v),
  'schedules describe': (args) => scheduleDescribe(args),
  'schedules pause': (args) => schedulePause('pause', args),
  'schedules unpause': (args) => schedulePause('unpause', args),
  'schedules trigger': (args) => scheduleTrigger(args),
  'replay-check': () => {
    throw new CliUsageError('"weft replay-check" runs without a database (runReplayCheck)');
  },
};

/** Checks the arguments of `command` (CliUsageError, the engine's validation errors) and returns its run. */
export function prepare(command: CommandName, args: string[], v: Values): Prepared {
  return PREPARE[command](args, v);
}
