// What the suites that boot the demo app (src/) share: its environment, set for the file and put
// back after it, and an order request.

/** Sets the demo's environment on top of its test defaults; returns what puts the previous values back. */
export function setDemoEnv(values: { DATABASE_URL: string; WEFT_API_KEY: string } & Record<string, string>): () => void {
  const env: Record<string, string> = { WEFT_SCHEMA: 'weft', DEMO_PACKING_DELAY: '50ms', DEMO_PAYMENT_FAILURE_RATE: '0', ...values };
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  return () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
}

export const order = (orderId: string, extra: Record<string, unknown> = {}) => ({
  orderId,
  items: [{ sku: 'tea', quantity: 2 }],
  amount: 1250,
  address: '1 Main St',
  ...extra,
});
