// The write commands: signal (MessageRepository.send, as engine.signal does) and cancel, suspend,
// resume (through the session's engine, session.ts), with the bulk cancel.
import { WeftError, WorkflowNotFoundError, WorkflowNotRunningError } from '../common/errors.js';
import { TERMINAL_STATUSES } from '../common/types.js';
import { toStoredJson, validateName, validateWorkflowId } from '../engine/validation.js';
import { CliAbortedError, CliConfirmationRequiredError, CliUsageError } from './errors.js';
import {
  BULK_CONCURRENCY,
  BULK_PAGE,
  type CliIo,
  filterOptions,
  type Filter,
  LIVE,
  matching,
  MAX_PAYLOAD_BYTES,
  type Prepared,
  reasonOption,
  str,
  type Values,
} from './options.js';
import { safe, table } from './table.js';

// --- signal ---------------------------------------------------------------------------------------

export function signal(args: string[], v: Values): Prepared {
  const id = validateWorkflowId(args[0]);
  const name = validateName('signal name', args[1]);
  const raw = str(v, 'payload');
  let payload: unknown = null;
  if (raw !== undefined) {
    try {
      payload = JSON.parse(raw);
    } catch (err) {
      throw new CliUsageError(`--payload is not JSON (${(err as Error).message}); quote it, e.g. --payload '{"n":1}'`);
    }
  }
  const stored = toStoredJson(payload, `Payload of signal "${name}"`, MAX_PAYLOAD_BYTES);
  return async (session) => {
    // One statement that stores the message and NOTIFYs the owner (message.repository.ts), as engine.signal does.
    const res = await session.store.messages.send(id, 'signal', name, stored);
    if (!res) throw new WorkflowNotFoundError(id);
    if (!res.messageId) throw new WorkflowNotRunningError(id, res.status);
    return {
      json: { workflowId: id, signal: name, messageId: res.messageId, status: res.status },
      text: `Signal "${safe(name)}" sent to ${safe(id)} (message ${res.messageId}; workflow ${res.status}).\n`,
    };
  };
}

// --- cancel, suspend, resume ---------------------------------------------------------------------

export function transition(command: 'cancel' | 'suspend' | 'resume', args: string[], v: Values): Prepared {
  const id = validateWorkflowId(args[0]);
  const reason = command === 'resume' ? undefined : reasonOption(v);
  return async (session) => {
    const engine = await session.writer(command);
    if (command === 'cancel') await engine.cancel(id, reason);
    else if (command === 'suspend') await engine.suspend(id, reason);
    else await engine.resume(id);
    const row = await session.store.workflows.get(id);
    const status = row?.status ?? null;
    const past = { cancel: 'Cancelled', suspend: 'Suspended', resume: 'Resumed' }[command];
    return { json: { workflowId: id, status }, text: `${past} ${safe(id)} (status ${status ?? 'gone'}).\n` };
  };
}

export function bulkCancel(v: Values): Prepared {
  const filter = filterOptions(v);
  const reason = reasonOption(v);
  const statuses = filter.statuses ?? LIVE;
  const ended = statuses.filter((s) => TERMINAL_STATUSES.includes(s));
  if (ended.length) throw new CliUsageError(`--status ${ended.join(',')}: ended workflows cannot be cancelled`);
  const f: Filter = { ...filter, statuses };
  const yes = v.yes === true;
  const described = [
    f.type && `type ${f.type}`,
    `status ${statuses.join('|')}`,
    f.idPrefix && `id prefix "${f.idPrefix}"`,
    ...((v.where as string[] | undefined) ?? []),
  ]
    .filter(Boolean)
    .join(', ');
  return async (session, io) => {
    const engine = await session.writer('cancel'); // refuses under 'lease' before anything is counted
    // The set confirmed is the one counted: workflows created after the count are left alone.
    const [{ now }] = await session.db.sql.query<{ now: string }>('SELECT clock_timestamp()::text AS now');
    const scoped = () => matching(session, f).andWhere('w.created_at <= CAST(:now AS timestamptz)', { now });
    const total = await scoped().getCount();
    if (total === 0)
      return { json: { matched: 0, cancelled: 0, skipped: 0, failed: [] }, text: `No workflows match (${safe(described)}).\n` };
    io.stderr.write(`${total} workflow(s) match (${safe(described)}).\n`);
    if (!yes) {
      if (!io.stdin.isTTY) throw new CliConfirmationRequiredError('cancel', total);
      if (!(await confirm(io, `Cancel ${total} workflow(s)? [y/N] `))) throw new CliAbortedError(`cancel of ${total} workflow(s)`);
    }
    let cancelled = 0;
    let skipped = 0;
    const failed: Array<{ workflowId: string; code: string | null; message: string }> = [];
    const progress = () => {
      const done = cancelled + skipped + failed.length;
      const line = `${cancelled}/${Math.max(total, done)} cancelled${skipped ? `, ${skipped} already ended` : ''}${failed.length ? `, ${failed.length} failed` : ''}`;
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
              await engine.cancel(id, reason);
              cancelled++;
            } catch (err) {
              if (err instanceof WorkflowNotRunningError)
                skipped++; // it ended meanwhile
              else failed.push({ workflowId: id, code: err instanceof WeftError ? err.code : null, message: (err as Error).message });
            }
          }),
        );
      }
      progress();
      if (ids.length < BULK_PAGE) break;
    }
    if (io.stderr.isTTY) io.stderr.write('\n');
    const text =
      `Cancelled ${cancelled} of ${total} workflow(s)` +
      `${skipped ? `; ${skipped} had already ended` : ''}${failed.length ? `; ${failed.length} failed:` : '.'}\n` +
      (failed.length
        ? table(
            ['id', 'code', 'message'],
            failed.map((x) => [x.workflowId, x.code, x.message]),
          )
        : '');
    return { json: { matched: total, cancelled, skipped, failed }, text, failed: failed.length > 0 };
  };
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
