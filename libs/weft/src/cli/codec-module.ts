// `--codec MODULE`: the app's payload codec, so the CLI decodes payloads (and encodes what its
// writes store) instead of showing `[encrypted: codec "<id>"]` (docs/cli.md, docs/codecs.md).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CodecOption } from '../common/codec.js';
import { Payloads } from '../storage/payloads.js';
import { CliUsageError } from './errors.js';
import { safe } from './table.js';

const isCodecOption = (v: unknown): v is CodecOption =>
  typeof v === 'object' && v !== null && ('current' in v || typeof (v as { encode?: unknown }).encode === 'function');

/**
 * Imports the module (a path, or a package) and takes its `codec` export (or its default): a
 * codec, `{ current, accepts }`, or a function (async or not) returning one, which may build the
 * app's key service. Checked as the engine checks its `codec` option.
 */
export async function loadCodec(spec: string): Promise<CodecOption> {
  const target = spec.startsWith('.') || path.isAbsolute(spec) ? pathToFileURL(path.resolve(spec)).href : spec;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(target)) as Record<string, unknown>;
  } catch (cause) {
    throw new CliUsageError(`--codec ${safe(spec)} could not be imported: ${safe((cause as Error)?.message ?? String(cause))}`);
  }
  let got = mod.codec ?? mod.default;
  if (typeof got === 'function' && !isCodecOption(got)) got = await (got as () => unknown)();
  if (!isCodecOption(got)) {
    throw new CliUsageError(
      `--codec ${safe(spec)} must export "codec" (or a default): a PayloadCodec, { current, accepts }, or a function returning one`,
    );
  }
  new Payloads(got); // the engine's checks: ids, methods (InvalidConfigurationError)
  return got;
}
