import { registerAs } from '@nestjs/config';
import { plainToInstance } from 'class-transformer';
import { validateSync, ValidationError } from 'class-validator';
import type { Duration } from '@weft/nest';
import type { OrderInput } from '../orders/order.types.js';
import { DemoConfigInvalidError } from './demo-config.error.js';
import { DemoEnvironment, OWNERSHIP_MODES, SECRET_VARIABLES } from './demo-environment.js';

/** The demo's configuration, checked; injected as `@Inject(demoConfig.KEY)`. */
export interface DemoConfig {
  /** Where main.ts listens. */
  http: { port: number; host: string };
  /** WeftModule's options (app.module.ts). */
  weft: {
    databaseUrl: string | undefined;
    schema: string;
    ownership: (typeof OWNERSHIP_MODES)[number];
    workflowClaimTtl: Duration;
    workflowClaimRenewInterval: Duration;
    engineId: string | undefined;
  };
  /** The key of /weft/* and /metrics; undefined: one is generated (ApiKey). */
  apiKey: string | undefined;
  /** What every order gets from the server rather than from its request. */
  orders: Pick<OrderInput, 'packingDelay' | 'approvalThreshold' | 'approvalTimeout'>;
  paymentFailureRate: number;
  carrierPollEvery: Duration;
}

/** One line per refused variable: its rules and, unless it may hold a secret, what it was. */
function problem(error: ValidationError, env: Record<string, string | undefined>): string {
  const rules = Object.values(error.constraints ?? {}).join(', ');
  if (SECRET_VARIABLES.has(error.property)) return rules;
  const given = String(env[error.property]);
  return `${rules} (got ${JSON.stringify(given.length > 60 ? `${given.slice(0, 60)}...` : given)})`;
}

/** Reads and checks the demo's variables in `env`; throws DemoConfigInvalidError listing every bad one. */
export function loadDemoConfig(env: Record<string, string | undefined>): DemoConfig {
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const vars = plainToInstance(DemoEnvironment, set, { excludeExtraneousValues: true, exposeDefaultValues: true });
  const errors = validateSync(vars, { stopAtFirstError: true });
  if (errors.length > 0) throw new DemoConfigInvalidError(errors.map((e) => problem(e, env)));
  return {
    http: { port: vars.PORT, host: vars.HOST },
    weft: {
      databaseUrl: vars.DATABASE_URL,
      schema: vars.WEFT_SCHEMA,
      ownership: vars.WEFT_OWNERSHIP,
      workflowClaimTtl: vars.WEFT_CLAIM_TTL,
      workflowClaimRenewInterval: vars.WEFT_CLAIM_RENEW,
      engineId: vars.WEFT_ENGINE_ID,
    },
    apiKey: vars.WEFT_API_KEY,
    orders: {
      packingDelay: vars.DEMO_PACKING_DELAY,
      approvalThreshold: vars.DEMO_APPROVAL_THRESHOLD,
      approvalTimeout: vars.DEMO_APPROVAL_TIMEOUT,
    },
    paymentFailureRate: vars.DEMO_PAYMENT_FAILURE_RATE,
    carrierPollEvery: vars.CARRIER_POLL_EVERY,
  };
}

/** Read from process.env when Nest builds the app (not when this file is imported), so tests can set it first. */
export const demoConfig = registerAs('demo', (): DemoConfig => loadDemoConfig(process.env));
