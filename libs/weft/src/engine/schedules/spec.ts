// A schedule's validated definition and its fire-time arithmetic. Pure: no clock, no I/O, so
// every engine computes the same fire times from the same row (and tests can pin the dates).
import { Cron } from 'croner';
import { parseDuration } from '../../common/duration.js';
import { InvalidArgumentError } from '../../common/errors.js';
import type { ScheduleCreateOptions, ScheduleOverlapPolicy } from '../../common/types.js';
import { validateName, validateWorkflowId } from '../validation.js';

const OVERLAPS: ScheduleOverlapPolicy[] = ['skip', 'buffer-one', 'allow-all', 'cancel-other'];
/** Fire ids are `${id}@${ISO time}` (25 characters) and workflow ids are at most 255. */
export const MAX_SCHEDULE_ID_LENGTH = 200;
/** Below this an interval schedule would fire faster than maintenance passes can follow. */
export const MIN_EVERY_MS = 1000;
/** Below this a window bounds nothing a pass could catch up; 0 read as "no catch-up" used to mean "never fire". */
export const MIN_CATCHUP_WINDOW_MS = 1000;
/** Missed fires are counted up to this many (a minutely cron over a year-long outage is half a million). */
export const MAX_MISSED_COUNT = 1000;
/** A cron without a year fires within 28 years of any date if it fires at all (the calendar repeats). */
const CALENDAR_CYCLE_FROM = new Date('2000-01-01T00:00:00Z');

/** The keys each entry point takes: a misspelt option (`timeZone`) is refused, not ignored. */
export const SCHEDULE_DECORATOR_KEYS = ['id', 'cron', 'every', 'timezone', 'input', 'overlap', 'catchupWindow'] as const;
export const SCHEDULE_CREATE_KEYS = [...SCHEDULE_DECORATOR_KEYS, 'workflowType', 'paused'] as const;
export const SCHEDULE_PATCH_KEYS = ['workflowType', 'cron', 'every', 'timezone', 'input', 'overlap', 'catchupWindow'] as const;

export interface ResolvedSchedule {
  id: string;
  workflowType: string;
  cron: string | null;
  everyMs: number | null;
  timezone: string | null;
  overlap: ScheduleOverlapPolicy;
  /** Null: one interval. */
  catchupWindowMs: number | null;
}

export type FireRule = Pick<ResolvedSchedule, 'cron' | 'everyMs' | 'timezone'>;

export function validateScheduleId(id: unknown): string {
  validateName('schedule id', id);
  const s = id as string;
  if (s.length > MAX_SCHEDULE_ID_LENGTH)
    throw new InvalidArgumentError('schedule id', `must be at most ${MAX_SCHEDULE_ID_LENGTH} characters`);
  return s;
}

/**
 * The id of a new schedule: a valid name whose fire ids (`${id}@${ISO time}`) are valid workflow
 * ids, by the engine's own workflow-id check. A schedule whose fires could never start is refused
 * here rather than failing on every pass.
 */
export function validateNewScheduleId(id: unknown): string {
  const s = validateScheduleId(id);
  try {
    validateWorkflowId(fireWorkflowId(s, CALENDAR_CYCLE_FROM));
  } catch (err) {
    throw new InvalidArgumentError('schedule id', `its fires' workflow ids would be invalid (${(err as Error).message})`, { cause: err });
  }
  return s;
}

/** Refuses keys outside `known`, naming the first unknown one and the options there are. */
export function rejectUnknownKeys(what: string, o: object, known: readonly string[]): void {
  const unknown = Object.keys(o).filter((k) => !known.includes(k));
  if (unknown.length) throw new InvalidArgumentError(what, `unknown option "${unknown[0]}"; the options are ${known.join(', ')}`);
}

/** Validates a schedule's definition before anything is written. */
export function resolveSchedule(o: ScheduleCreateOptions, keys: readonly string[] = SCHEDULE_CREATE_KEYS): ResolvedSchedule {
  if (typeof o !== 'object' || o === null) throw new InvalidArgumentError('schedule', 'must be an object');
  rejectUnknownKeys('schedule options', o, keys);
  const id = validateNewScheduleId(o.id);
  const workflowType = validateName('schedule workflowType', o.workflowType);
  const rule = resolveRule(o);
  const overlap = o.overlap ?? 'skip';
  if (!OVERLAPS.includes(overlap)) throw new InvalidArgumentError('schedule overlap', `must be one of ${OVERLAPS.join(', ')}`);
  return { id, workflowType, ...rule, overlap, catchupWindowMs: resolveCatchupWindow(o.catchupWindow) };
}

function resolveCatchupWindow(w: ScheduleCreateOptions['catchupWindow']): number | null {
  if (w === undefined) return null;
  const ms = parseDuration(w, 'schedule catchupWindow');
  if (ms < MIN_CATCHUP_WINDOW_MS) {
    throw new InvalidArgumentError(
      'schedule catchupWindow',
      `must be at least ${MIN_CATCHUP_WINDOW_MS}ms (got ${ms}ms); fires on time always start, the window only bounds how late a caught-up fire may be`,
    );
  }
  return ms;
}

export function resolveRule(o: { cron?: unknown; every?: unknown; timezone?: unknown }): FireRule {
  const hasCron = o.cron !== undefined && o.cron !== null;
  const hasEvery = o.every !== undefined && o.every !== null;
  if (hasCron === hasEvery) throw new InvalidArgumentError('schedule', 'needs exactly one of "cron" and "every"');
  if (hasEvery) {
    if (o.timezone !== undefined) throw new InvalidArgumentError('schedule timezone', 'applies to "cron" only');
    const everyMs = parseDuration(o.every as number | string, 'schedule every');
    if (everyMs < MIN_EVERY_MS) throw new InvalidArgumentError('schedule every', `must be at least ${MIN_EVERY_MS}ms`);
    return { cron: null, everyMs: Math.round(everyMs), timezone: null };
  }
  if (typeof o.cron !== 'string' || o.cron.length > 255)
    throw new InvalidArgumentError('schedule cron', 'must be a cron expression of at most 255 characters');
  const timezone = o.timezone === undefined ? null : validateTimezone(o.timezone);
  let cron: Cron;
  try {
    cron = cronOf({ cron: o.cron, timezone });
  } catch (err) {
    throw new InvalidArgumentError('schedule cron', `"${o.cron}" is not a valid cron expression (${(err as Error).message})`, {
      cause: err,
    });
  }
  if (!cron.nextRun(CALENDAR_CYCLE_FROM))
    throw new InvalidArgumentError('schedule cron', `"${o.cron}" can never fire (no date matches it); check the day and month fields`);
  return { cron: o.cron, everyMs: null, timezone };
}

function validateTimezone(tz: unknown): string {
  if (typeof tz !== 'string' || tz.length === 0 || tz.length > 64)
    throw new InvalidArgumentError('schedule timezone', 'must be an IANA time zone name');
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch (err) {
    throw new InvalidArgumentError('schedule timezone', `"${tz}" is not an IANA time zone (for example "Europe/Berlin")`, { cause: err });
  }
  return tz;
}

/**
 * 5 fields, or 6 with seconds (no year field: a cron naming years could stop firing for good).
 * 'no-wildcard': a cron whose second, minute and hour fields have no wildcard or step (`0 2,3 * * *`,
 * `0,30 2 * * *`) is a fixed-time job: once in a repeated hour, at the first valid time after a
 * skipped one. A cron with a step or wildcard there (every 15 minutes) is an interval job: it
 * runs through both occurrences of a repeated hour and skips the times of a skipped one.
 */
function cronOf(r: { cron: string; timezone: string | null }): Cron {
  return new Cron(r.cron, { timezone: r.timezone ?? 'Etc/UTC', paused: true, mode: '5-or-6-parts', fixedTimeRule: 'no-wildcard' });
}

/** The first `count` fire times strictly after `after`. */
export function fireTimesAfter(r: FireRule, after: Date, count: number): Date[] {
  const out: Date[] = [];
  if (r.everyMs !== null) {
    let t = Math.floor(after.getTime() / r.everyMs) * r.everyMs + r.everyMs;
    for (; out.length < count; t += r.everyMs) out.push(new Date(t));
    return out;
  }
  const cron = cronOf({ cron: r.cron!, timezone: r.timezone });
  let prev = after;
  while (out.length < count) {
    const next = cron.nextRun(prev);
    if (!next) break;
    out.push(next);
    prev = next;
  }
  return out;
}

/** One interval around `at`: the default catch-up window. For cron, the gap between the next two fires. */
export function intervalAround(r: FireRule, at: Date): number {
  if (r.everyMs !== null) return r.everyMs;
  const [a, b] = fireTimesAfter(r, at, 2);
  return a && b ? b.getTime() - a.getTime() : 0;
}

/** The workflow id of one fire: the same on every engine, so a fire starts exactly once. */
export function fireWorkflowId(scheduleId: string, fireAt: Date): string {
  return `${scheduleId}@${fireAt.toISOString()}`;
}

/** The newest `limit` fire times in [from, to], oldest first, and whether there are more in it. */
function newestBetween(r: FireRule, from: Date, to: Date, limit: number): { times: Date[]; more: boolean } {
  if (from > to) return { times: [], more: false };
  if (r.everyMs !== null) {
    const first = Math.ceil(from.getTime() / r.everyMs) * r.everyMs;
    const last = Math.floor(to.getTime() / r.everyMs) * r.everyMs;
    const n = last < first ? 0 : (last - first) / r.everyMs + 1;
    const kept = Math.min(n, limit);
    return { times: Array.from({ length: kept }, (_, i) => new Date(last - (kept - 1 - i) * r.everyMs!)), more: n > kept };
  }
  // Walked back from `to`: the newest fires, however long the outage (croner: a run in the same
  // second before the reference counts, one at the reference itself does not, so +1 ms).
  const back = cronOf({ cron: r.cron!, timezone: r.timezone }).previousRuns(limit + 1, new Date(to.getTime() + 1));
  const inside = back.filter((t) => t >= from);
  return { times: inside.slice(0, limit).reverse(), more: inside.length > limit };
}

/** How many fire times lie in [from, before), counted up to MAX_MISSED_COUNT. */
function countBetween(r: FireRule, from: Date, before: Date): number {
  if (from >= before) return 0;
  if (r.everyMs !== null) {
    const first = Math.ceil(from.getTime() / r.everyMs) * r.everyMs;
    return Math.min(MAX_MISSED_COUNT, Math.max(0, Math.ceil((before.getTime() - first) / r.everyMs)));
  }
  const cron = cronOf({ cron: r.cron!, timezone: r.timezone });
  let n = 0;
  for (let t = cron.nextRun(new Date(from.getTime() - 1)); t && t < before && n < MAX_MISSED_COUNT; t = cron.nextRun(t)) n++;
  return n;
}

/**
 * The fires due at `now` for a schedule whose next fire was `nextFireAt`. A fire is started when
 * it is at most `windowMs` late, or `onTimeMs` (one pass interval and a margin: the pass that
 * reaches a fire on time is never later than that), judged by the fire's own due time; of those,
 * the newest `max`. The others are missed: how many (up to MAX_MISSED_COUNT) and the newest.
 */
export function dueFires(
  r: FireRule,
  nextFireAt: Date,
  now: Date,
  window: { windowMs: number; onTimeMs: number },
  max: number,
): { due: Date[]; missed: number; lastMissed: Date | null } {
  if (nextFireAt > now) return { due: [], missed: 0, lastMissed: null };
  const windowStart = new Date(now.getTime() - Math.max(window.windowMs, window.onTimeMs));
  const inside = newestBetween(r, nextFireAt > windowStart ? nextFireAt : windowStart, now, max);
  const missedBefore = inside.times[0] ?? new Date(now.getTime() + 1);
  const missed = countBetween(r, nextFireAt, missedBefore);
  const lastMissed = missed > 0 ? newestBetween(r, nextFireAt, new Date(missedBefore.getTime() - 1), 1).times[0] : null;
  return { due: inside.times, missed, lastMissed: lastMissed ?? null };
}
