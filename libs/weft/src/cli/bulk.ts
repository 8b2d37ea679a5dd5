// A bulk operation by filter (cancel, retry, fork): the count, a confirmation, progress on stderr
// and a summary. The set is the one counted, pinned by an "as of" time: re-run with --as-of after
// an interruption and it goes on with what is left, never acting twice on what it already did.
import { WeftError } from '../common/errors.js';
import { CliAbortedError, CliConfirmationRequiredError, CliUsageError } from './errors.js';
import { BULK_CONCURRENCY, BULK_PAGE, type CliIo, type Filter, matching, type Output, str, type Values } from './options.js';
import type { Session } from './session.js';
import { safe, table } from './table.js';

export interface BulkSpec {
  /** The verb of the prompt and the summary ('cancel', 'retry', 'fork'). */
  verb: string;
  /** Its past tense, the JSON key of the count done ('cancelled', 'retried', 'forked'). */
  past: string;
  filter: Filter;
  /** How the filter reads in the count line. */
  described: string;
  /**
   * 'unchanged': only workflows not changed since the as-of time (a retried run's row moves, so a
   * re-run skips it even if it failed again); 'created': created by then (cancel, fork).
   */
  scope: 'created' | 'unchanged';
  /** Extra conditions on `w` (a fork's sources are not forks themselves). */
  where?: string[];
  /** Acts on one; 'skipped' when it no longer applies (ended meanwhile, already done). */
  act(id: string): Promise<'done' | 'skipped'>;
  /** Why the skipped were skipped, for the summary ('had already ended'). */
  skippedAs: string;
}

/** --as-of: an ISO time printed by an earlier run of the same bulk command. */
export function asOfOption(v: Values): string | undefined {
  const raw = str(v, 'as-of');
  if (raw === undefined) return undefined;
  if (Number.isNaN(Date.parse(raw)) || !/^\d{4}-\d{2}-\d{2}/.test(raw))
    throw new CliUsageError(`--as-of must be the ISO time an earlier run printed (got "${safe(raw)}")`);
  return raw;
}

export async function runBulk(session: Session, io: CliIo, spec: BulkSpec, yes: boolean, asOf: string | undefined): Promise<Output> {
  const at = asOf ?? (await session.db.sql.query<{ now: string }>('SELECT clock_timestamp()::text AS now'))[0].now;
  const scoped = () => {
    const qb = matching(session, spec.filter).andWhere('w.created_at <= CAST(:at AS timestamptz)', { at });
    if (spec.scope === 'unchanged') qb.andWhere('w.updated_at <= CAST(:at AS timestamptz)', { at });
    for (const w of spec.where ?? []) qb.andWhere(w);
    return qb;
  };
  const total = await scoped().getCount();
  if (total === 0)
    return { json: { matched: 0, [spec.past]: 0, skipped: 0, failed: [] }, text: `No workflows match (${safe(spec.described)}).\n` };
  io.stderr.write(`${total} workflow(s) match (${safe(spec.described)}).\n`);
  if (!yes) {
    if (!io.stdin.isTTY) throw new CliConfirmationRequiredError(spec.verb, total);
    if (!(await confirm(io, `${spec.verb[0].toUpperCase()}${spec.verb.slice(1)} ${total} workflow(s)? [y/N] `)))
      throw new CliAbortedError(`${spec.verb} of ${total} workflow(s)`);
  }
  io.stderr.write(`If interrupted, run the same command with --as-of ${at} to go on with what is left.\n`);
  let done = 0;
  let skipped = 0;
  const failed: Array<{ workflowId: string; code: string | null; message: string }> = [];
  const progress = () => {
    const line = `${done}/${Math.max(total, done + skipped + failed.length)} ${spec.past}${skipped ? `, ${skipped} skipped` : ''}${failed.length ? `, ${failed.length} failed` : ''}`;
    io.stderr.write(io.stderr.isTTY ? `\r${line}` : `${line}\n`);
  };
  let afterId: string | null = null;
  for (;;) {
    const qb = scoped().select('w.id', 'id').orderBy('w.id', 'ASC').limit(BULK_PAGE);
    if (afterId !== null) qb.andWhere('w.id > :afterId', { afterId });
    const ids = (await qb.getRawMany<{ id: string }>()).map((r) => r.id);
    if (ids.length === 0) break;
    afterId = ids[ids.length - 1];
    for (let i = 0; i < ids.length; i += BULK_CONCURRENCY) {
      await Promise.all(
        ids.slice(i, i + BULK_CONCURRENCY).map(async (id) => {
          try {
            if ((await spec.act(id)) === 'done') done++;
            else skipped++;
          } catch (err) {
            failed.push({ workflowId: id, code: err instanceof WeftError ? err.code : null, message: (err as Error).message });
          }
        }),
      );
    }
    progress();
    if (ids.length < BULK_PAGE) break;
  }
  if (io.stderr.isTTY) io.stderr.write('\n');
  const past = `${spec.past[0].toUpperCase()}${spec.past.slice(1)}`;
  const text =
    `${past} ${done} of ${total} workflow(s)` +
    `${skipped ? `; ${skipped} ${spec.skippedAs}` : ''}${failed.length ? `; ${failed.length} failed:` : '.'}\n` +
    (failed.length
      ? table(
          ['id', 'code', 'message'],
          failed.map((x) => [x.workflowId, x.code, x.message]),
        )
      : '');
  return { json: { matched: total, [spec.past]: done, skipped, failed, asOf: at }, text, failed: failed.length > 0 };
}

async function confirm(io: CliIo, question: string): Promise<boolean> {
  const { createInterface } = await import('node:readline');
  const rl = createInterface({ input: io.stdin, output: io.stderr as NodeJS.WritableStream, terminal: false });
  try {
    const answer = await new Promise<string>((resolve) => {
      rl.question(question, resolve);
      rl.once('close', () => resolve(''));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
