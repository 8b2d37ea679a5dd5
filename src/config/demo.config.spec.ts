import 'reflect-metadata';
import { DemoConfigInvalidError } from './demo-config.error.js';
import { loadDemoConfig } from './demo.config.js';

function refusal(env: Record<string, string>): DemoConfigInvalidError {
  try {
    loadDemoConfig(env);
  } catch (err) {
    if (err instanceof DemoConfigInvalidError) return err;
    throw err;
  }
  throw new Error('loadDemoConfig accepted the environment');
}

describe('loadDemoConfig (the demo environment, src/config/)', () => {
  it('with nothing set: the defaults npm start runs with (embedded PostgreSQL, port 3000, a generated key)', () => {
    expect(loadDemoConfig({})).toEqual({
      http: { port: 3000, host: '127.0.0.1' },
      weft: {
        databaseUrl: undefined,
        schema: 'weft',
        ownership: 'workflow-lease',
        workflowClaimTtl: '6s',
        workflowClaimRenewInterval: '1s',
        engineId: undefined,
      },
      apiKey: undefined,
      orders: { packingDelay: '5s', approvalThreshold: 50_000, approvalTimeout: '10m' },
      paymentFailureRate: 0.3,
      carrierPollEvery: '30s',
    });
  });

  it('converts numbers, counts an empty variable as unset and ignores variables it does not declare', () => {
    const config = loadDemoConfig({
      DATABASE_URL: 'postgresql://app@db:5432/orders',
      PORT: '0',
      WEFT_API_KEY: '',
      DEMO_APPROVAL_THRESHOLD: '100',
      DEMO_PAYMENT_FAILURE_RATE: '0',
      DEMO_PACKING_DELAY: '1.5 h',
      WEFT_OWNERSHIP: 'lease',
      HOME: '/root',
    });
    expect(config).toMatchObject({
      http: { port: 0 },
      weft: { databaseUrl: 'postgresql://app@db:5432/orders', ownership: 'lease' },
      apiKey: undefined,
      orders: { packingDelay: '1.5 h', approvalThreshold: 100 },
      paymentFailureRate: 0,
    });
    expect(config).not.toHaveProperty('HOME');
  });

  it('refuses every bad variable at once, one rule each, with what it was given', () => {
    const err = refusal({
      PORT: 'eighty',
      WEFT_OWNERSHIP: 'shared',
      WEFT_CLAIM_TTL: '30 days',
      DEMO_PACKING_DELAY: '400d',
      DEMO_APPROVAL_THRESHOLD: '1.5',
      DEMO_PAYMENT_FAILURE_RATE: '2',
      CARRIER_POLL_EVERY: 'x'.repeat(100),
    });
    expect(err.code).toBe('DEMO_CONFIG_INVALID');
    expect(err.problems).toEqual([
      'PORT must be an integer from 0 to 65535 (got "eighty")',
      'WEFT_OWNERSHIP must be one of the following values: none, lease, workflow-lease (got "shared")',
      'WEFT_CLAIM_TTL must be a duration such as 500ms, 10s, 5m, 2h or 1d (got "30 days")',
      'DEMO_PACKING_DELAY must be a duration such as 500ms, 10s, 5m, 2h or 1d, at most 365d (got "400d")',
      'DEMO_APPROVAL_THRESHOLD must be a positive whole number of cents (got "1.5")',
      'DEMO_PAYMENT_FAILURE_RATE must be a number from 0 to 1 (got "2")',
      `CARRIER_POLL_EVERY must be a duration such as 500ms, 10s, 5m, 2h or 1d, at most 365d (got "${'x'.repeat(60)}...")`,
    ]);
    expect(err.message).toMatch(/^The demo's environment is invalid: PORT must be .*\. Fix or unset these variables/);
  });

  it('never repeats DATABASE_URL or WEFT_API_KEY: they may hold a password', () => {
    const err = refusal({ DATABASE_URL: 'mysql://app:s3cret@db/orders', WEFT_API_KEY: `k${'e'.repeat(1024)}y` });
    expect(err.problems).toEqual([
      'DATABASE_URL must be a postgres:// or postgresql:// URL',
      'WEFT_API_KEY must be shorter than or equal to 1024 characters',
    ]);
    expect(err.message).not.toMatch(/s3cret|eeee/);
  });
});
