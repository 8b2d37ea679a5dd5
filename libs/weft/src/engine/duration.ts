import { InvalidDurationError } from '../errors';

/** Milliseconds, or a string like '250ms', '10s', '5m', '2h', '1d' (decimals allowed). */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;

export function parseDuration(value: Duration, option: string): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new InvalidDurationError(value, option);
    return value;
  }
  if (typeof value !== 'string') throw new InvalidDurationError(value, option);
  const m = PATTERN.exec(value.trim());
  if (!m) throw new InvalidDurationError(value, option);
  const ms = Number(m[1]) * UNIT_MS[m[2] ?? 'ms'];
  if (!Number.isFinite(ms)) throw new InvalidDurationError(value, option);
  return ms;
}

export function parseOptionalDuration(value: Duration | undefined, option: string): number | undefined {
  return value === undefined ? undefined : parseDuration(value, option);
}
