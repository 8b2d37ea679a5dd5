// Command line of the `weft` CLI, parsed with node:util parseArgs: the commands, their options,
// and the help text. Anything unknown or missing is a CliUsageError (exit code 2).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CliUsageError } from './errors.js';

type OptionSpec = NonNullable<ParseArgsConfig['options']>[string];

const GLOBAL: Record<string, OptionSpec> = {
  'database-url': { type: 'string' },
  schema: { type: 'string' },
  codec: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export type CommandName =
  | 'list'
  | 'describe'
  | 'history'
  | 'signal'
  | 'cancel'
  | 'suspend'
  | 'resume'
  | 'retry'
  | 'fork'
  | 'engines'
  | 'schedules list'
  | 'schedules describe'
  | 'schedules pause'
  | 'schedules unpause'
  | 'schedules trigger'
  | 'replay-check';

/** The first word of the commands that have subcommands (`weft schedules list`). */
export type CommandGroup = 'schedules';
const GROUPS: readonly CommandGroup[] = ['schedules'];

interface CommandSpec {
  /** Positional arguments: required ones, then optional ones in brackets. */
  args: string[];
  options: Record<string, OptionSpec>;
  summary: string;
  help: string;
}

const STATUS = { type: 'string', multiple: true } as const;
const WHERE = { type: 'string', multiple: true } as const;
const BULK_FILTERS = { type: { type: 'string' }, status: STATUS, 'id-prefix': { type: 'string' }, where: WHERE } as const;
const BULK_HELP = `  --type, --status, --id-prefix, --where
               bulk: every workflow matching all of them. Prints the count and asks for
               confirmation on a terminal; progress goes to stderr, a summary to stdout.
  --as-of      the time a bulk run printed: re-run with it after an interruption to go on
               with what is left of the set it counted (nothing is done twice)
  --yes, -y    do not ask (required when stdin is not a terminal)`;
const WHERE_HELP = `  --where      an attribute condition: key=value (repeat a key for any of its values; 42
               matches the number or the text, "42" only the text), key>N, key>=N,
               key<N, key<=N on numbers or ISO-8601 timestamps; every one must hold`;

export const COMMANDS: Record<CommandName, CommandSpec> = {
  list: {
    args: [],
    options: {
      status: STATUS,
      type: { type: 'string' },
      'id-prefix': { type: 'string' },
      where: WHERE,
      order: { type: 'string' },
      include: { type: 'string', multiple: true },
      limit: { type: 'string' },
      after: { type: 'string' },
    },
    summary: 'list workflows, oldest first (or newest), filtered by status, type, id and attributes',
    help: `weft list [--status S[,S...]] [--type T] [--id-prefix P] [--where COND]... [--order newest|oldest]
          [--include input,output] [--limit N] [--after CURSOR]

  --status     pending, running, suspended, completed, failed, cancelled, timed_out (repeat or comma-separate)
  --type       workflow type
  --id-prefix  ids starting with this text
${WHERE_HELP}
  --order      newest or oldest first by creation time (default oldest)
  --include    add each workflow's input and/or output (repeat or comma-separate)
  --limit      rows per page, 1 to 1000 (default 50)
  --after      the cursor a previous page printed, for the next page (same --order)`,
  },
  describe: {
    args: ['id'],
    options: {},
    summary: 'one workflow: status, times, input, output, error, claim, children',
    help: `weft describe <id>`,
  },
  history: {
    args: ['id'],
    options: { limit: { type: 'string' }, after: { type: 'string' } },
    summary: 'the recorded operations of one workflow, in order',
    help: `weft history <id> [--limit N] [--after SEQ]

  --limit  operations to print, 1 to 10000 (default 1000)
  --after  only operations with a higher seq (the next page)`,
  },
  signal: {
    args: ['id', 'name'],
    options: { payload: { type: 'string' } },
    summary: 'send a signal to a workflow',
    help: `weft signal <id> <name> [--payload JSON]

  --payload  the signal's payload as JSON (default null), at most 1 MiB`,
  },
  cancel: {
    args: ['[id]'],
    options: {
      reason: { type: 'string' },
      type: { type: 'string' },
      status: STATUS,
      'id-prefix': { type: 'string' },
      where: WHERE,
      'as-of': { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
    },
    summary: 'cancel one workflow, or every one matching filters',
    help: `weft cancel <id> [--reason TEXT]
weft cancel (--type T | --status S | --id-prefix P | --where COND)... [--reason TEXT] [--yes]

  --reason     recorded as the cancellation's message (at most 1000 characters)
  --type, --status, --id-prefix, --where
               bulk: cancel every workflow matching all of them (status defaults to
               pending, running and suspended). Prints the count and asks for
               confirmation on a terminal; progress goes to stderr.
  --yes, -y    do not ask (required when stdin is not a terminal)`,
  },
  suspend: {
    args: ['id'],
    options: { reason: { type: 'string' } },
    summary: 'stop a running workflow without ending it',
    help: `weft suspend <id> [--reason TEXT]`,
  },
  resume: {
    args: ['id'],
    options: {},
    summary: 'let a suspended workflow run again (an engine running its type picks it up)',
    help: `weft resume <id>`,
  },
  retry: {
    args: ['[id]'],
    options: { workflows: { type: 'string' }, ...BULK_FILTERS, 'as-of': { type: 'string' }, yes: { type: 'boolean', short: 'y' } },
    summary: 'run a failed workflow again from its failed step (one, or every one matching filters)',
    help: `weft retry <id> --workflows MODULE
weft retry (--type T | --id-prefix P | --where COND)... --workflows MODULE [--as-of TIME] [--yes]

  The history before the failed step is replayed on the code --workflows gives first; a
  divergence refuses with WEFT_FORK_REFUSED. The run goes on as the next run number of the
  same id, on an engine that runs its type.
  --workflows  a module exporting "workflows" (or a default): workflow definitions or
               [name, Class] pairs, or a function returning them
${BULK_HELP}`,
  },
  fork: {
    args: ['[id]'],
    options: {
      workflows: { type: 'string' },
      'from-step': { type: 'string' },
      'workflow-id': { type: 'string' },
      ...BULK_FILTERS,
      'as-of': { type: 'string' },
      yes: { type: 'boolean', short: 'y' },
    },
    summary: 'a new workflow with the history before a step, the rest run on the current code',
    help: `weft fork <id> --from-step STEP --workflows MODULE [--workflow-id ID]
weft fork --from-step STEP (--type T | --status S | --id-prefix P | --where COND)... --workflows MODULE [--as-of TIME] [--yes]

  --from-step    a seq, or a step name (its first operation): it and everything after run again
  --workflow-id  the new workflow's id (default generated; in bulk each is <id>~fork-<step>)
  --workflows    as for retry
${BULK_HELP}`,
  },
  engines: {
    args: [],
    options: { 'claim-ttl': { type: 'string' } },
    summary: 'engines holding claims, the age of their latest renewal, and the lease holder',
    help: `weft engines [--claim-ttl MS]

  --claim-ttl  the engines' workflowClaimTtl in ms (default 15000), to date their
               latest renewal (a renewal sets expiry = now + TTL)`,
  },
  'schedules list': {
    args: [],
    options: { limit: { type: 'string' }, after: { type: 'string' } },
    summary: 'schedules by id: rule, time zone, paused, next fire, last run',
    help: `weft schedules list [--limit N] [--after ID]

  --limit  schedules per page, 1 to 1000 (default 100)
  --after  the schedule id a previous page printed, for the next page`,
  },
  'schedules describe': {
    args: ['id'],
    options: {},
    summary: 'one schedule: its definition, next fire times and recent runs',
    help: `weft schedules describe <id>`,
  },
  'schedules pause': {
    args: ['id'],
    options: {},
    summary: 'stop firing a schedule (a run in progress goes on)',
    help: `weft schedules pause <id>`,
  },
  'schedules unpause': {
    args: ['id'],
    options: {},
    summary: 'fire a paused schedule again, from its next fire time after now',
    help: `weft schedules unpause <id>`,
  },
  'schedules trigger': {
    args: ['id'],
    options: {},
    summary: "start one extra run of a schedule's workflow now; prints its workflow id",
    help: `weft schedules trigger <id>

  The run is stored as a start due now; an engine that runs the workflow type starts it
  with its next timer pass (timerPollInterval).`,
  },
  'replay-check': {
    args: ['path'],
    options: { workflows: { type: 'string' }, timeout: { type: 'string' } },
    summary: 'replay exported histories against the current code; exit 1 at a divergence (no database)',
    help: `weft replay-check <file|dir> --workflows <module> [--timeout MS]

  <file|dir>   JSON of engine.describe(id) (or GET <prefix>/workflows/:id): one object, an
               array of them, or { "workflows": [...] }; a directory: every *.json in it
  --workflows  a module (path or package) exporting the workflow types: definitions,
               [name, Class] pairs, arrays of them, or a function (default export or
               \`workflows\`) returning them, or { workflows, close() } (docs/testing.md)
  --timeout    ms one replay may take, 1 to 600000 (default 10000)

  Prints each run's result; exit code 1 names the first operation the code no longer makes.`,
  },
};

const COMMON = `Options for every command:
  --database-url URL  PostgreSQL URL (default: the DATABASE_URL environment variable)
  --schema NAME       Weft's schema (default public)
  --codec MODULE      a module exporting the app's payload codec ("codec" or default: a codec,
                      { current, accepts }, or a function returning one): payloads are decoded
                      instead of shown as [encrypted: codec "<id>"] (docs/codecs.md)
  --json              machine-readable output on stdout
  --help, -h          this help`;

const commandsOf = (group: CommandGroup) => (Object.keys(COMMANDS) as CommandName[]).filter((n) => n.startsWith(`${group} `));

export function usage(command?: CommandName | CommandGroup): string {
  if (command && isGroup(command))
    return `${commandsOf(command)
      .map((n) => COMMANDS[n].help)
      .join('\n\n')}\n\n${COMMON}\n`;
  if (command) return `${COMMANDS[command].help}\n\n${COMMON}\n`;
  const names = Object.keys(COMMANDS) as CommandName[];
  const w = Math.max(...names.map((n) => n.length));
  return (
    `weft: inspect and operate Weft workflows in PostgreSQL (no running service needed)\n\n` +
    `Usage: weft <command> [arguments] [options]\n\nCommands:\n` +
    names.map((n) => `  ${n.padEnd(w)}  ${COMMANDS[n].summary}`).join('\n') +
    `\n\n${COMMON}\n\nExit codes: 0 ok, 1 failure, 2 bad usage. "weft <command> --help" for a command's options.\n`
  );
}

export interface Parsed {
  command: CommandName | null;
  /** --help was asked for (of `command`, of `group`, or in general). */
  help: boolean;
  /** `weft schedules --help`, `weft help schedules`: the help of every command of the group. */
  group?: CommandGroup;
  positionals: string[];
  values: Record<string, string | boolean | string[] | undefined>;
}

const ALL: Record<string, OptionSpec> = Object.assign({}, GLOBAL, ...Object.values(COMMANDS).map((c) => c.options));

const isCommand = (name: string): name is CommandName => Object.prototype.hasOwnProperty.call(COMMANDS, name);
const isGroup = (name: string): name is CommandGroup => (GROUPS as readonly string[]).includes(name);

/** The command named by the leading positionals: `list`, or `schedules list` (how many words it took). */
function commandAt(positionals: string[], help: boolean): { command: CommandName; words: number } | { group: CommandGroup } {
  const [first, second] = positionals;
  if (!isGroup(first)) {
    if (!isCommand(first)) throw new CliUsageError(`Unknown command "${first}"`);
    return { command: first, words: 1 };
  }
  if (second === undefined) {
    if (help) return { group: first };
    throw new CliUsageError(
      `"weft ${first}" needs a subcommand: ${commandsOf(first)
        .map((n) => n.slice(first.length + 1))
        .join(', ')}`,
    );
  }
  const name = `${first} ${second}`;
  if (!isCommand(name)) throw new CliUsageError(`Unknown command "${name}"`);
  return { command: name, words: 2 };
}

function strictParse(argv: string[], options: Record<string, OptionSpec>) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (err) {
    // parseArgs' own messages name the option ("Unknown option '--x'", "Option '--limit <value>' argument missing").
    throw new CliUsageError((err as Error).message.replace(/\.?\s*To specify a positional argument.*$/s, ''));
  }
}

const helpOf = (command: CommandName): Parsed => ({ command, help: true, positionals: [], values: {} });

export function parseCommandLine(argv: string[]): Parsed {
  // First pass: every option of every command, only to find the command among the positionals.
  const loose = parseArgs({ args: argv, options: ALL, allowPositionals: true, strict: false });
  const [first] = loose.positionals;
  if (first === undefined) {
    if (loose.values.help) return { command: null, help: true, positionals: [], values: {} };
    throw new CliUsageError('No command given');
  }
  if (first === 'help') {
    if (loose.positionals.length === 1) return { command: null, help: true, positionals: [], values: {} };
    const of = commandAt(loose.positionals.slice(1), true);
    return 'group' in of ? { command: null, group: of.group, help: true, positionals: [], values: {} } : helpOf(of.command);
  }
  const at = commandAt(loose.positionals, loose.values.help === true);
  if ('group' in at) return { command: null, group: at.group, help: true, positionals: [], values: {} };
  const { command, words } = at;
  const spec = COMMANDS[command];
  const { values, positionals } = strictParse(argv, { ...GLOBAL, ...spec.options });
  if (values.help) return helpOf(command);
  const args = positionals.slice(words);
  const required = spec.args.filter((a) => !a.startsWith('['));
  if (args.length < required.length) {
    throw new CliUsageError(`"weft ${command}" needs ${spec.args.map((a) => (a.startsWith('[') ? a : `<${a}>`)).join(' ')}`);
  }
  if (args.length > spec.args.length)
    throw new CliUsageError(`"weft ${command}" takes ${spec.args.length} argument(s), got ${args.length}`);
  return { command, help: false, positionals: args, values: values as Parsed['values'] };
}
