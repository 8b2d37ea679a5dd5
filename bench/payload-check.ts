// bench/payload-check: what the check of an offered payload costs (toStoredJson: the walk that
// refuses what JSON would change or PostgreSQL cannot store, the serialization, the size bound and
// the JSON round trip), per call, for a small input, an order of ~800 bytes and one of ~8 KB. Every
// start's input and every step's result pays it. Prints JSON; µs a call, the median of 5 runs.
// node --import ./test/support/register-ts.js bench/payload-check.ts
import { toStoredJson } from '../libs/weft/src/engine/validation.js';
import { percentile, round } from './support.js';

const order = (items: number) => ({
  order: {
    id: 'o-123',
    items: Array.from({ length: items }, (_, i) => ({ sku: `s${i}`, qty: i, price: 9.99 })),
    customer: { name: 'A B', email: 'a@b.c' },
  },
});
const payloads: Record<string, unknown> = { small: { n: 1 }, order800B: order(20), order8KB: order(230) };

const out: Record<string, { bytes: number; usPerCall: number }> = {};
for (const [name, value] of Object.entries(payloads)) {
  const calls = Math.max(2_000, Math.round(4_000_000 / JSON.stringify(value).length));
  const runs: number[] = [];
  for (let r = 0; r < 6; r++) {
    const t = performance.now();
    for (let i = 0; i < calls; i++) toStoredJson(value, 'Workflow input', 1 << 22);
    if (r > 0) runs.push(((performance.now() - t) * 1000) / calls); // the first warms the JIT
  }
  runs.sort((a, b) => a - b);
  out[name] = { bytes: JSON.stringify(value).length, usPerCall: round(percentile(runs, 50), 2) };
}
process.stdout.write(`${JSON.stringify({ bench: 'payload-check', ...out }, null, 2)}\n`);
