// `weft schedules list|describe|pause|unpause|trigger`. Reads go through engine.schedules' read
// side (ScheduleReader) on the session's repositories, with no engine; writes through the
// session's one-command engine (session.ts), so they are engine.schedules' own statements.
import type { ScheduleDescription } from '../common/types.js';
import { ScheduleReader } from '../engine/schedules/schedules.js';
import { validateScheduleId } from '../engine/schedules/spec.js';
import { intOption, iso, str, type Prepared, type Values } from './options.js';
import type { Session } from './session.js';
import { keyValues, safe, table } from './table.js';

const reader = (session: Session) => new ScheduleReader(session.store.schedules, session.store.workflows);

/** A whole number of the largest unit that divides it: 90000 -> '90s', 3600000 -> '1h'. */
function every(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

const ruleText = (d: ScheduleDescription) => (d.cron !== null ? d.cron : `every ${every(d.everyMs ?? 0)}`);

/** The last fire: the workflow's status, or the outcome when nothing ran (skipped, missed, buffered). */
function lastRunText(d: ScheduleDescription): string | null {
  const last = d.recentRuns[0];
  if (!last) return null;
  return last.status === null ? last.outcome : `${last.status} (${last.outcome})`;
}

/** A description as JSON: dates as ISO strings, everything else as engine.schedules.describe() gives it. */
function scheduleJson(d: ScheduleDescription) {
  return {
    id: d.id,
    workflowType: d.workflowType,
    cron: d.cron,
    everyMs: d.everyMs,
    timezone: d.timezone,
    input: d.input ?? null,
    overlap: d.overlap,
    catchupWindowMs: d.catchupWindowMs,
    paused: d.paused,
    source: d.source,
    nextFireTimes: d.nextFireTimes.map((t) => iso(t)!),
    bufferedFireAt: iso(d.bufferedFireAt),
    recentRuns: d.recentRuns.map((r) => ({ fireAt: iso(r.fireAt)!, workflowId: r.workflowId, outcome: r.outcome, status: r.status })),
    createdAt: iso(d.createdAt),
    updatedAt: iso(d.updatedAt),
  };
}

// --- reads ----------------------------------------------------------------------------------------

export function scheduleList(v: Values): Prepared {
  const limit = intOption(v, 'limit', 1, 1000, 100);
  const after = str(v, 'after') === undefined ? undefined : validateScheduleId(str(v, 'after'));
  return async (session, io) => {
    const schedules = reader(session);
    const page = await schedules.list({ after, limit });
    const last = page[page.length - 1];
    // One more row after the page says whether there is a next one.
    const more = page.length === limit && last !== undefined && (await schedules.list({ after: last.id, limit: 1 })).length > 0;
    const nextCursor = more ? last.id : null;
    if (nextCursor) io.stderr.write(`More: add --after ${safe(nextCursor)}\n`);
    const text = page.length
      ? table(
          ['id', 'workflow type', 'cron / every', 'timezone', 'paused', 'next fire', 'last run'],
          page.map((d) => [d.id, d.workflowType, ruleText(d), d.timezone, d.paused ? 'yes' : 'no', d.nextFireTimes[0], lastRunText(d)]),
        )
      : 'No schedules.\n';
    return { json: { items: page.map(scheduleJson), nextCursor }, text };
  };
}

export function scheduleDescribe(args: string[]): Prepared {
  const id = validateScheduleId(args[0]);
  return async (session) => {
    const d = await reader(session).describe(id);
    return { json: scheduleJson(d), text: describeText(d) };
  };
}

function describeText(d: ScheduleDescription): string {
  let text = keyValues([
    ['id', d.id],
    ['workflow type', d.workflowType],
    ['cron / every', ruleText(d)],
    ['timezone', d.timezone],
    ['overlap', d.overlap],
    ['catch-up', every(d.catchupWindowMs)],
    ['input', d.input],
    ['paused', d.paused ? 'yes' : 'no'],
    ['source', d.source],
    ['next fires', d.nextFireTimes.length ? d.nextFireTimes.map((t) => t.toISOString()).join(', ') : null],
    ['buffered', d.bufferedFireAt],
    ['last run', lastRunText(d)],
    ['created', d.createdAt],
    ['updated', d.updatedAt],
  ]);
  if (d.recentRuns.length) {
    text += `\n${table(
      ['fire at', 'workflow', 'outcome', 'status'],
      d.recentRuns.map((r) => [r.fireAt, r.workflowId, r.outcome, r.status]),
    )}`;
  }
  return text;
}

// --- writes ---------------------------------------------------------------------------------------

export function schedulePause(command: 'pause' | 'unpause', args: string[]): Prepared {
  const id = validateScheduleId(args[0]);
  return async (session) => {
    const engine = await session.writer(command, 'schedules');
    const d = command === 'pause' ? await engine.schedules.pause(id) : await engine.schedules.unpause(id);
    const next = d.nextFireTimes[0];
    const text =
      command === 'pause'
        ? `Paused schedule ${safe(id)}: it fires no more until unpaused.\n`
        : `Unpaused schedule ${safe(id)}: next fire ${next ? next.toISOString() : '-'}.\n`;
    return { json: scheduleJson(d), text };
  };
}

export function scheduleTrigger(args: string[]): Prepared {
  const id = validateScheduleId(args[0]);
  return async (session) => {
    const engine = await session.writer('trigger', 'schedules');
    const { workflowId } = await engine.schedules.trigger(id);
    return {
      json: { scheduleId: id, workflowId },
      text: `Triggered schedule ${safe(id)}: workflow ${safe(workflowId)}.\n`,
    };
  };
}
