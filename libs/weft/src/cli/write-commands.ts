// The write commands: signal (MessageRepository.send, as engine.signal does) and cancel, suspend,
// resume (through the session's engine, session.ts), with the bulk cancel.
import { WorkflowNotFoundError, WorkflowNotRunningError } from '../common/errors.js';
import { TERMINAL_STATUSES } from '../common/types.js';
import { toStoredJson, validateName, validateWorkflowId } from '../engine/validation.js';
import { CliUsageError } from './errors.js';
import { asOfOption, runBulk } from './bulk.js';
import { filterOptions, type Filter, LIVE, MAX_PAYLOAD_BYTES, type Prepared, reasonOption, str, type Values } from './options.js';
import { safe } from './table.js';

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
  const asOf = asOfOption(v);
  const statuses = filter.statuses ?? LIVE;
  const ended = statuses.filter((s) => TERMINAL_STATUSES.includes(s));
  if (ended.length) throw new CliUsageError(`--status ${ended.join(',')}: ended workflows cannot be cancelled`);
  const f: Filter = { ...filter, statuses };
  return async (session, io) => {
    const engine = await session.writer('cancel'); // refuses under 'lease' before anything is counted
    const act = async (id: string) => {
      try {
        await engine.cancel(id, reason);
        return 'done' as const;
      } catch (err) {
        if (err instanceof WorkflowNotRunningError) return 'skipped' as const; // it ended meanwhile
        throw err;
      }
    };
    const spec = { verb: 'cancel', past: 'cancelled', filter: f, described: describeFilter(f, v), scope: 'created' as const, act };
    return runBulk(session, io, { ...spec, skippedAs: 'had already ended' }, v.yes === true, asOf);
  };
}

/** The filter as the count line prints it. */
export function describeFilter(f: Filter, v: Values): string {
  return [
    f.type && `type ${f.type}`,
    f.statuses && `status ${f.statuses.join('|')}`,
    f.idPrefix && `id prefix "${f.idPrefix}"`,
    ...((v.where as string[] | undefined) ?? []),
  ]
    .filter(Boolean)
    .join(', ');
}
