import { Expose, Type } from 'class-transformer';
import { IsIn, IsInt, IsNumber, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateBy } from 'class-validator';
import type { Duration } from '@weft/nest';

/** What Weft's durations accept: milliseconds, or a number with a unit ('500ms', '10s', '5m', '2h', '1d'). */
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a duration string, or undefined when it is not one. */
export function durationMs(value: unknown): number | undefined {
  const m = typeof value === 'string' ? DURATION.exec(value.trim()) : null;
  return m ? Number(m[1]) * UNIT_MS[m[2] ?? 'ms'] : undefined;
}

/**
 * A duration of at most `max`. The demo's own durations are capped at a year (a longer one is a
 * typo); Weft's options are only checked for their form here, Weft bounds them at start-up.
 */
function IsDuration(max?: { ms: number; text: string }): PropertyDecorator {
  return ValidateBy({
    name: 'isDuration',
    validator: {
      validate: (value) => {
        const ms = durationMs(value);
        return ms !== undefined && (!max || ms <= max.ms);
      },
      defaultMessage: (args) =>
        `${args?.property} must be a duration such as 500ms, 10s, 5m, 2h or 1d${max ? `, at most ${max.text}` : ''}`,
    },
  });
}

const A_YEAR = { ms: 365 * UNIT_MS.d, text: '365d' };
// One message per rule, whichever of its checks fails first.
const PORT_RULE = { message: '$property must be an integer from 0 to 65535' };
const CENTS_RULE = { message: '$property must be a positive whole number of cents' };
const RATE_RULE = { message: '$property must be a number from 0 to 1' };

export const OWNERSHIP_MODES = ['none', 'lease', 'workflow-lease'] as const;

/**
 * Every environment variable the demo reads, with its default and its rule: the one place they
 * are declared (README, "The demo's configuration"). Values arrive as strings; numbers are
 * converted before they are checked. An empty variable counts as unset.
 */
export class DemoEnvironment {
  /** No DATABASE_URL: an embedded PostgreSQL under ./.weft/pg. Never echoed: it may hold a password. */
  @Expose()
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'DATABASE_URL must be a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  @Expose() @Type(() => Number) @IsInt(PORT_RULE) @Min(0, PORT_RULE) @Max(65535, PORT_RULE) PORT: number = 3000;
  @Expose() @IsString() @MaxLength(255) HOST: string = '127.0.0.1';

  /** Unset: a key generated and logged once per process (src/api-key.ts). Never echoed. */
  @Expose() @IsOptional() @IsString() @MaxLength(1024) WEFT_API_KEY?: string;

  // Weft's own options: Weft checks the schema name, the engine id and the durations' bounds.
  @Expose() @IsString() @MaxLength(63) WEFT_SCHEMA: string = 'weft';
  /** Several demo processes may share the embedded server: each workflow gets one fenced owner. */
  @Expose() @IsIn(OWNERSHIP_MODES) WEFT_OWNERSHIP: (typeof OWNERSHIP_MODES)[number] = 'workflow-lease';
  @Expose() @IsDuration() WEFT_CLAIM_TTL: Duration = '6s';
  @Expose() @IsDuration() WEFT_CLAIM_RENEW: Duration = '1s';
  @Expose() @IsOptional() @IsString() @MaxLength(255) WEFT_ENGINE_ID?: string;

  // The orders' settings, handed to each order as part of its input.
  @Expose() @IsDuration(A_YEAR) DEMO_PACKING_DELAY: Duration = '5s';
  /** Orders of at least this many cents wait for an approval... */
  @Expose()
  @Type(() => Number)
  @IsInt(CENTS_RULE)
  @Min(1, CENTS_RULE)
  @Max(Number.MAX_SAFE_INTEGER, CENTS_RULE)
  DEMO_APPROVAL_THRESHOLD: number = 50_000;
  /** ...for at most this long. */
  @Expose() @IsDuration(A_YEAR) DEMO_APPROVAL_TIMEOUT: Duration = '10m';
  /** The share of charges the fake payment gateway times out (then retried by Weft). */
  @Expose() @Type(() => Number) @IsNumber({}, RATE_RULE) @Min(0, RATE_RULE) @Max(1, RATE_RULE) DEMO_PAYMENT_FAILURE_RATE: number = 0.3;

  /** How often the carrier poller reads the carrier's feed. */
  @Expose() @IsDuration(A_YEAR) CARRIER_POLL_EVERY: Duration = '30s';
}

/** The variables whose value an error message must not repeat. */
export const SECRET_VARIABLES: ReadonlySet<string> = new Set(['DATABASE_URL', 'WEFT_API_KEY']);
