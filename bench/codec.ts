// bench/codec: the target of issue #41, the 3-step workflow with AesGcmCodec on ÷ off at 16 in
// flight, as a ratio taken in one run. Prints one JSON object on stdout.
// node --expose-gc --enable-source-maps --import ./test/support/register-ts.js bench/codec.ts [WORKFLOWS per chunk]
//
// Two engines in this process, each on its own database (codec on, codec off), warmed up alike;
// then BENCH_CHUNKS (default 8) rounds in which each runs WORKFLOWS workflows, the order flipping
// every round, so the machine's drift hits both (the heap collected before each, with
// --expose-gc). Also: what encode + decode of one step result costs alone, in µs.
import { AesGcmCodec, WeftEngine } from '@weft/nest';
import { randomBytes } from 'node:crypto';
import { Payloads } from '../libs/weft/src/storage/payloads.js';
import { machine, percentile, round, silent, ThreeNoops, withFreshDatabase } from './support.js';

const WORKFLOWS = Number(process.argv[2] ?? 1500);
const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 8);
const IN_FLIGHT = 16;
const log = (m: string) => process.stderr.write(`[codec] ${m}\n`);
type Variant = 'on' | 'off';

async function chunk(engine: WeftEngine, total: number): Promise<{ perSec: number; cpuMsPerWorkflow: number }> {
  // Both engines share this process's heap: collect before each chunk (untimed), so a chunk is not
  // charged for a major collection of the other variant's garbage.
  (globalThis as { gc?: () => void }).gc?.();
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const worker = async () => {
    while (next < total) {
      const n = next++;
      await (await engine.start('three-noops', { n, card: '4111-1111-1111-1111' })).result();
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const cpu = process.cpuUsage(cpu0);
  return { perSec: total / ((performance.now() - t0) / 1000), cpuMsPerWorkflow: (cpu.user + cpu.system) / 1000 / total };
}

/** encode + decode of a small step result, alone: the codec's own cost per payload. */
async function perPayloadMicros(payloads: Payloads): Promise<number> {
  const value = { n: 42, card: '4111-1111-1111-1111' };
  const rounds = 20_000;
  for (let i = 0; i < 2000; i++) await payloads.decode(await payloads.encode(value));
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) await payloads.decode(await payloads.encode(value));
  return ((performance.now() - t0) * 1000) / rounds;
}

const codec = new AesGcmCodec('bench', randomBytes(32));

await withFreshDatabase((onUrl) =>
  withFreshDatabase(async (offUrl) => {
    const make = async (url: string, on: boolean) => {
      const e = await WeftEngine.create({
        database: { url, poolSize: 20 },
        schema: 'weft',
        logger: silent,
        shutdownGracePeriod: 0,
        ...(on ? { codec } : {}),
      });
      e.register('three-noops', ThreeNoops);
      await e.bootstrap();
      return e;
    };
    const engines: Record<Variant, WeftEngine> = { on: await make(onUrl, true), off: await make(offUrl, false) };
    try {
      for (let i = 0; i < 2; i++) for (const v of ['on', 'off'] as const) await chunk(engines[v], 1000); // warm-up
      const rates: Record<Variant, number[]> = { on: [], off: [] };
      const cpu: Record<Variant, number[]> = { on: [], off: [] };
      for (let i = 0; i < CHUNKS; i++) {
        const order: Variant[] = i % 2 ? ['off', 'on'] : ['on', 'off'];
        for (const v of order) {
          const r = await chunk(engines[v], WORKFLOWS);
          rates[v].push(r.perSec);
          cpu[v].push(r.cpuMsPerWorkflow);
        }
        log(`chunk ${i}: on ${round(rates.on.at(-1)!)} /s, off ${round(rates.off.at(-1)!)} /s`);
      }
      const pairs = rates.on.map((x, i) => x / rates.off[i]).sort((a, b) => a - b);
      const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
      process.stdout.write(
        `${JSON.stringify({
          bench: 'codec',
          machine: machine(),
          at: new Date().toISOString(),
          inFlight: IN_FLIGHT,
          workflowsPerChunk: WORKFLOWS,
          chunks: CHUNKS,
          onWorkflowsPerSec: round(sum(rates.on) / CHUNKS, 1),
          offWorkflowsPerSec: round(sum(rates.off) / CHUNKS, 1),
          ratio: round(sum(rates.on) / sum(rates.off), 3),
          ratioChunkMedian: round(percentile(pairs, 50), 3),
          ratioChunkRange: [round(pairs[0], 3), round(pairs.at(-1)!, 3)],
          cpuMsPerWorkflow: { on: round(sum(cpu.on) / CHUNKS, 3), off: round(sum(cpu.off) / CHUNKS, 3) },
          encodeDecodeMicrosPerPayload: round(await perPayloadMicros(new Payloads(codec)), 2),
        })}\n`,
      );
    } finally {
      await Promise.all([engines.on.dispose(), engines.off.dispose()]);
    }
  }),
);
