import { InvalidDurationError } from './errors.js';

/** The units a duration string may end with: milliseconds, seconds, minutes, hours, days. */
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

/**
 * Milliseconds, or a string like '250ms', '10s', '5m', '2h', '1d', '1.5 h' (decimals allowed;
 * a bare number string is milliseconds). The type admits what parseDuration accepts, so
 * '30 days' does not compile.
 */
export type Duration = number | `${number}` | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;

/**
 * The longest duration Weft accepts: 100 years (36,500 days). Durations become PostgreSQL
 * timestamps (now + delay); far past this they overflow the timestamp range (error 22008),
 * and even a sum of a few maximal ones (a delayed start plus its execution timeout) stays
 * centuries inside it.
 */
export const MAX_DURATION_MS = 36_500 * UNIT_MS.d;

/** `value` is checked at run time: options and requests arrive untyped (JSON, env, CLI). */
export function parseDuration(value: Duration | string, option: string): number {
  const ms = toMs(value);
  if (ms === undefined || ms > MAX_DURATION_MS) throw new InvalidDurationError(value, option);
  return ms;
}

function toMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const m = PATTERN.exec(value.trim());
  return m ? Number(m[1]) * UNIT_MS[m[2] ?? 'ms'] : undefined;
}

export function parseOptionalDuration(value: Duration | string | undefined, option: string): number | undefined {
  return value === undefined ? undefined : parseDuration(value, option);
}
