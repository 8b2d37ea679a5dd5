// One invocation of the `weft` CLI: parse, check, connect, run, print, and map the outcome to an
// exit code (0 ok, 1 failure, 2 bad usage). Kept apart from main.ts so tests can call it in-process.
import {
  InvalidArgumentError,
  InvalidConfigurationError,
  InvalidWorkflowIdError,
  PayloadNotSerializableError,
  PayloadTooLargeError,
  WeftError,
} from '../common/errors.js';
import { CliConfirmationRequiredError, CliUsageError } from './errors.js';
import { parseCommandLine, usage, type Parsed } from './args.js';
import { prepare, type CliIo } from './commands.js';
import { runReplayCheck } from './replay-check.js';
import { loadCodec } from './codec-module.js';
import { Session } from './session.js';
import { jsonText, safe } from './table.js';

export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** Errors in what the operator typed, found before or while checking it: exit code 2. */
const USAGE_ERRORS = [
  CliUsageError,
  CliConfirmationRequiredError,
  InvalidArgumentError,
  InvalidWorkflowIdError,
  InvalidConfigurationError,
  PayloadNotSerializableError,
  PayloadTooLargeError,
];

const isUsage = (err: unknown) => USAGE_ERRORS.some((E) => err instanceof E);

function report(io: CliIo, err: unknown, json: boolean): number {
  const code = err instanceof WeftError ? err.code : null;
  const message = (err as Error)?.message ?? String(err);
  if (json) io.stderr.write(`${jsonText({ error: { code, name: (err as Error)?.name ?? 'Error', message } })}\n`);
  else io.stderr.write(`weft: ${code ?? (err as Error)?.name ?? 'Error'}: ${safe(message)}\n`);
  return isUsage(err) ? EXIT.usage : EXIT.failure;
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let parsed: Parsed;
  const json = argv.includes('--json');
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    if (argv.length === 0) io.stderr.write(`${usage()}\n`);
    return report(io, err, json);
  }
  if (parsed.help) {
    io.stdout.write(usage(parsed.command ?? parsed.group));
    return EXIT.ok;
  }
  const command = parsed.command!;
  if (command === 'replay-check') return runReplayCheck(parsed.positionals, parsed.values, io, json).catch((err) => report(io, err, json));
  let session: Session | undefined;
  try {
    const run = prepare(command, parsed.positionals, parsed.values);
    const codecSpec = parsed.values.codec as string | undefined;
    session = await Session.open({
      codec: codecSpec === undefined ? undefined : await loadCodec(codecSpec),
      databaseUrl: (parsed.values['database-url'] as string | undefined) ?? io.env.DATABASE_URL,
      schema: parsed.values.schema as string | undefined,
      logger: {
        log: () => undefined,
        warn: (m) => io.stderr.write(`weft: warning: ${safe(m)}\n`),
        error: (m) => io.stderr.write(`weft: ${safe(m)}\n`),
      },
    });
    const out = await run(session, io, json);
    io.stdout.write(json ? `${jsonText(out.json, 2)}\n` : out.text);
    return out.failed ? EXIT.failure : EXIT.ok;
  } catch (err) {
    return report(io, err, json);
  } finally {
    await session?.close().catch((err: unknown) => io.stderr.write(`weft: closing the database failed: ${safe((err as Error).message)}\n`));
  }
}
