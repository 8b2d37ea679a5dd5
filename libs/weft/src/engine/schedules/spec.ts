// A schedule's validated definition and its fire-time arithmetic. Pure: no clock, no I/O, so
// every engine computes the same fire times from the same row (and tests can pin the dates).
import { Cron } from 'croner';
import { parseDuration } from '../../common/duration.js';
import { InvalidArgumentError } from '../../common/errors.js';
import type { ScheduleCreateOptions, ScheduleOverlapPolicy } from '../../common/types.js';
import { validateName } from '../validation.js';

const OVERLAPS: ScheduleOverlapPolicy[] = ['skip', 'buffer-one', 'allow-all', 'cancel-other'];
/** Fire ids are `${id}@${ISO time}` (25 characters) and workflow ids are at most 255. */
export const MAX_SCHEDULE_ID_LENGTH = 200;
/** Below this an interval schedule would fire faster than maintenance passes can follow. */
export const MIN_EVERY_MS = 1000;
const MAX_WALK = 10_000;

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

/** Validates a schedule's definition before anything is written. */
export function resolveSchedule(o: ScheduleCreateOptions): ResolvedSchedule {
  if (typeof o !== 'object' || o === null) throw new InvalidArgumentError('schedule', 'must be an object');
  const id = validateScheduleId(o.id);
  const workflowType = validateName('schedule workflowType', o.workflowType);
  const rule = resolveRule(o);
  const overlap = o.overlap ?? 'skip';
  if (!OVERLAPS.includes(overlap)) throw new InvalidArgumentError('schedule overlap', `must be one of ${OVERLAPS.join(', ')}`);
  const catchupWindowMs = o.catchupWindow === undefined ? null : parseDuration(o.catchupWindow, 'schedule catchupWindow');
  return { id, workflowType, ...rule, overlap, catchupWindowMs };
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
  try {
    cronOf({ cron: o.cron, timezone });
  } catch (err) {
    throw new InvalidArgumentError('schedule cron', `"${o.cron}" is not a valid cron expression (${(err as Error).message})`, {
      cause: err,
    });
  }
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

function cronOf(r: { cron: string; timezone: string | null }): Cron {
  return new Cron(r.cron, { timezone: r.timezone ?? 'Etc/UTC', paused: true, mode: 'auto' });
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

/** The fire times in [from, to], at most `limit` (the latest ones when there are more), and how many were dropped. */
export function fireTimesBetween(r: FireRule, from: Date, to: Date, limit: number): { times: Date[]; dropped: number } {
  if (from > to) return { times: [], dropped: 0 };
  if (r.everyMs !== null) {
    const first = Math.ceil(from.getTime() / r.everyMs) * r.everyMs;
    const last = Math.floor(to.getTime() / r.everyMs) * r.everyMs;
    const n = last < first ? 0 : (last - first) / r.everyMs + 1;
    const kept = Math.min(n, limit);
    const times = Array.from({ length: kept }, (_, i) => new Date(last - (kept - 1 - i) * r.everyMs!));
    return { times, dropped: n - kept };
  }
  const times: Date[] = [];
  let dropped = 0;
  const cron = cronOf({ cron: r.cron!, timezone: r.timezone });
  let prev = new Date(from.getTime() - 1);
  // Bounded: a minutely cron over a year-long outage would otherwise walk half a million fires.
  for (let walked = 0; walked < MAX_WALK; walked++) {
    const next = cron.nextRun(prev);
    if (!next || next > to) break;
    times.push(next);
    if (times.length > limit) {
      times.shift();
      dropped++;
    }
    prev = next;
  }
  return { times, dropped };
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

/**
 * The fires due at `now` for a schedule whose next fire was `nextFireAt`: those inside the
 * catch-up window `[now - windowMs, now]` (the latest `max`), and how many fell before it (missed).
 */
export function dueFires(
  r: FireRule,
  nextFireAt: Date,
  now: Date,
  windowMs: number,
  max: number,
): { due: Date[]; missed: number; lastMissed: Date | null } {
  if (nextFireAt > now) return { due: [], missed: 0, lastMissed: null };
  const windowStart = new Date(now.getTime() - windowMs);
  const before = fireTimesBetween(r, nextFireAt, new Date(Math.min(windowStart.getTime() - 1, now.getTime())), 1);
  const inside = fireTimesBetween(r, nextFireAt > windowStart ? nextFireAt : windowStart, now, max);
  return {
    due: inside.times,
    missed: before.times.length + before.dropped + inside.dropped,
    lastMissed: before.times[0] ?? null,
  };
}
