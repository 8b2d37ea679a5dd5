// bench/signal-latency: how long a signal sent with engine.signal() on one engine PROCESS takes
// to reach its handler on ANOTHER engine process that owns the workflow (ownership
// 'workflow-lease'), (a) with LISTEN/NOTIFY and (b) with NOTIFY off on the receiver, so only its
// owner-side poll (on the renewal cadence) delivers. Prints JSON.
// node --import ./test/support/register-ts.js bench/signal-latency.ts [trials=500] [pollIntervalMs=100]
//
// What is measured, per trial (trials run one at a time):
//   oneWayMs: receiver's wall clock when the signal handler starts  minus  sender's wall clock just
//     before it calls engine.signal(). Both are performance.timeOrigin + performance.now() in two
//     processes on this machine; `clock` reports their offset as estimated by the orchestrator.
//   signalCallMs: how long engine.signal() took in the sender (it returns once the signal is stored).
//   observedMs: the orchestrator's own clock from writing the command to the sender's stdin to
//     reading the receiver's "delivered" line: one clock, no offsets, but it adds two pipe hops
//     and JSON handling, so it is an upper bound of oneWayMs.
// In the polling mode every send is preceded by a random pause in [0, poll interval), so sends
// are not phase-locked to the poll (back-to-back sends would each wait almost a full interval).
import { ChildProcess, spawn } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { CommandClient, Reply } from '../test/fixtures/command-client.js';
import { TS_NODE_ARGS } from '../test/support/node-ts.js';
import { adminUrl, machine, percentile, round, withFreshDatabase } from './support.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'engine-child.ts');
const WARMUP = 20;

interface Proc {
  proc: ChildProcess;
  cmd: CommandClient;
  stderr: string[];
}

async function spawnEngine(url: string, id: string, env: Record<string, string>): Promise<Proc> {
  const proc = spawn(process.execPath, [...TS_NODE_ARGS, FIXTURE], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url, WEFT_SCHEMA: 'weft', WEFT_ENGINE_ID: id, OWNERSHIP: 'workflow-lease', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  proc.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  const cmd = new CommandClient(proc, id);
  const exited = new Promise<never>((_, reject) =>
    proc.once('exit', (code) => reject(new Error(`engine ${id} exited (${code}): ${stderr.join('').slice(-2000)}`))),
  );
  await Promise.race([cmd.next((e) => e.event === 'ready', 60_000, '"ready"'), exited]);
  return { proc, cmd, stderr };
}

async function stop(p: Proc): Promise<void> {
  const exited = new Promise((r) => p.proc.once('exit', r));
  p.proc.stdin!.end(); // the fixture disposes its engine and exits
  const t = setTimeout(() => p.proc.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

/** Offset of a child's wall clock from ours (ms, child minus orchestrator), from the fastest of n pings. */
async function clockOffset(p: Proc, n = 50): Promise<{ offsetMs: number; uncertaintyMs: number }> {
  let best = { rtt: Infinity, offset: 0 };
  for (let i = 0; i < n; i++) {
    const t0 = performance.timeOrigin + performance.now();
    const childNow = await p.cmd.call<number>('clock');
    const t1 = performance.timeOrigin + performance.now();
    if (t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: childNow - (t0 + t1) / 2 };
  }
  return { offsetMs: round(best.offset, 3), uncertaintyMs: round(best.rtt / 2, 3) };
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return {
    p50: round(percentile(s, 50), 3),
    p90: round(percentile(s, 90), 3),
    p99: round(percentile(s, 99), 3),
    max: round(s[s.length - 1], 3),
    mean: round(s.reduce((a, b) => a + b, 0) / s.length, 3),
  };
};

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function runMode(
  url: string,
  sender: Proc,
  mode: { name: 'notify' | 'poll'; notify: boolean; ttlMs: number; renewMs: number },
  trials: number,
) {
  const receiver = await spawnEngine(url, `receiver-${mode.name}`, {
    MESSAGE_TYPES: 'tally',
    NOTIFY: mode.notify ? '1' : '0',
    CLAIM_TTL_MS: String(mode.ttlMs),
    CLAIM_RENEW_MS: String(mode.renewMs),
  });
  try {
    const workflowId = `latency-${mode.name}`;
    await receiver.cmd.call('start', { type: 'tally', input: { label: mode.name }, opts: { workflowId } });
    await until(
      async () => (await receiver.cmd.call<{ history: Array<{ name: string }> }>('describe', { workflowId })).history.length > 0,
      'the receiver to park the workflow',
    );
    const arrivals = new Map<string, { at: number; seenAt: number; engine: unknown }>();
    receiver.cmd.watch((e) => {
      if (e.event === 'delivered' && e.workflowId === workflowId && typeof e.payload === 'string') {
        arrivals.set(e.payload, { at: e.at as number, seenAt: performance.now(), engine: e.engine });
      }
    });
    const clock = { sender: await clockOffset(sender), receiver: await clockOffset(receiver) };

    const oneWay: number[] = [];
    const call: number[] = [];
    const observed: number[] = [];
    // Wait on delivery by listening, not polling: resolves as soon as the receiver's line is read.
    const waitDelivery = (tag: string) =>
      arrivals.has(tag)
        ? Promise.resolve()
        : receiver.cmd.next((e) => e.event === 'delivered' && e.payload === tag, 30_000, `delivery of ${tag}`).then(() => undefined);
    const run = async (tag: string, record: boolean) => {
      if (!mode.notify) await new Promise((r) => setTimeout(r, Math.random() * mode.renewMs));
      const t0 = performance.now();
      const delivered = waitDelivery(tag);
      const reply: Reply = await sender.cmd.send('signal', { workflowId, name: 'add', payload: tag });
      if (!reply.ok) throw new Error(`signal failed: ${JSON.stringify(reply.error)}`);
      await delivered;
      const a = arrivals.get(tag)!;
      if (a.engine !== `receiver-${mode.name}`) throw new Error(`delivered on ${String(a.engine)}`);
      if (!record) return;
      oneWay.push(a.at - reply.sentAt);
      call.push(reply.doneAt - reply.sentAt);
      observed.push(a.seenAt - t0);
    };
    for (let i = 0; i < WARMUP; i++) await run(`warm-${i}`, false);
    for (let i = 0; i < trials; i++) await run(`t-${i}`, true);

    // The workflow saw every signal, in order, exactly once.
    await sender.cmd.call('signal', { workflowId, name: 'close', payload: 'end' });
    const out = await receiver.cmd.call<{ items: string[] }>('result', { workflowId, timeout: 30_000 });
    const sent = [...Array.from({ length: WARMUP }, (_, i) => `warm-${i}`), ...Array.from({ length: trials }, (_, i) => `t-${i}`)];
    if (JSON.stringify(out.items) !== JSON.stringify(sent))
      throw new Error(`workflow saw ${out.items.length} signals, not the ${sent.length} sent, in order`);

    return {
      mode: mode.name,
      receiverNotify: mode.notify,
      ...(mode.notify ? {} : { pollIntervalMs: mode.renewMs, pollNote: 'owner-side poll on the renewal cadence (±20% jitter)' }),
      claimTtlMs: mode.ttlMs,
      claimRenewMs: mode.renewMs,
      trials,
      warmupTrials: WARMUP,
      oneWayMs: stats(oneWay),
      signalCallMs: stats(call),
      observedMs: stats(observed),
      clockOffsetVsOrchestratorMs: clock,
    };
  } finally {
    await stop(receiver);
  }
}

async function main() {
  const trials = Number(process.argv[2] ?? 500);
  const pollMs = Number(process.argv[3] ?? 100);
  const loadBefore = os.loadavg().map((l) => round(l, 2));
  const results = await withFreshDatabase(async (url) => {
    // The sender registers no message workflow type and listens to nothing: it only sends.
    const sender = await spawnEngine(url, 'sender', { MESSAGE_TYPES: '-', NOTIFY: '0' });
    try {
      const notify = await runMode(url, sender, { name: 'notify', notify: true, ttlMs: 15_000, renewMs: 3_000 }, trials);
      const poll = await runMode(url, sender, { name: 'poll', notify: false, ttlMs: pollMs * 10, renewMs: pollMs }, trials);
      return [notify, poll];
    } finally {
      await stop(sender);
    }
  });
  const server = new URL(adminUrl());
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: 'signal-latency',
        at: new Date().toISOString(),
        machine: machine(),
        loadAverage: { before: loadBefore, after: os.loadavg().map((l) => round(l, 2)) },
        database: `${server.hostname}:${server.port || 5432}`,
        measured:
          'oneWayMs = receiver wall clock at handler start - sender wall clock just before engine.signal(); two engine processes (ownership workflow-lease) on one machine, one trial at a time. signalCallMs = engine.signal() duration in the sender. observedMs = orchestrator clock from command write to reading the delivered line (upper bound, includes two pipe hops).',
        target: { notifyP50Ms: 3, met: results[0].oneWayMs.p50 <= 3 },
        results,
      },
      null,
      2,
    )}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
