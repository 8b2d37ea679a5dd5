// bench/talk-latency (#37, docs/events-and-streams.md): how soon a reader sees what workflow code
// publishes, beside a bare NOTIFY round trip measured in the same run; and one stream read by
// many server-sent-event clients at once.
// node --import ./test/support/register-ts.js bench/talk-latency.ts [trials=300] [sseEntries=10000] [sseClients=10]
//
// Latency, per trial (one at a time, after 20 unmeasured): the workflow (bench/talk-workflows.ts,
// 'publisher') is signalled, stamps its wall clock just before ctx.setEvent and again before
// ctx.writeStream; the reader's getEvent / readStream, already waiting, takes its clock when the
// value reaches it. So a figure is the run's commit (a durable write: its WAL flush), the NOTIFY's
// delivery to the reader's engine and the reader's one read after it.
//  - oneEngine: the engine that runs the workflow reads.
//  - twoProcesses: the workflow runs in another process (bench/talk-writer.ts); the reader's
//    engine here. Clocks differ by an offset estimated from the fastest of 50 pings (reported).
// References, same run: bareNotify (pg_notify on one connection until LISTEN on another hears it)
// and commitNotify (an INSERT and a pg_notify in one autocommit statement: the floor of any
// durable publish, its WAL flush included).
// Ownership 'workflow-lease' on every engine: under 'none' the reader would also try to drive the
// workflow on every signal.
//
// SSE: a Nest app (WeftModule, http: true) serves GET /weft/workflows/:id/streams/s; `sseClients`
// clients connect before workflow 'flood' writes `sseEntries` entries from workflow code as fast as
// it goes, then closes the stream. live: from the signal that starts the writes to the last
// client's `end` event; catchUp: the same clients reading the finished stream from 0 at once.
// Every client must get every offset once, in order (allComplete).
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { NestFactory } from '@nestjs/core';
import { Module } from '@nestjs/common';
import { Client } from 'pg';
import { WeftEngine, WeftModule } from '@weft/nest';
import { TS_NODE_ARGS } from '../test/support/node-ts.js';
import { machine, percentile, round, silent, withFreshDatabase } from './support.js';
import { Flood, Publisher, wallNow } from './talk-workflows.js';

const trials = Number(process.argv[2] ?? 300);
const sseEntries = Number(process.argv[3] ?? 10_000);
const sseClients = Number(process.argv[4] ?? 10);
const WARMUP = 20;

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: round(percentile(s, 50), 3), p99: round(percentile(s, 99), 3), max: round(s[s.length - 1], 3) };
};

async function reference(url: string, n: number, sql: string): Promise<number[]> {
  const [tx, rx] = [new Client({ connectionString: url }), new Client({ connectionString: url })];
  await Promise.all([tx.connect(), rx.connect()]);
  await rx.query('LISTEN bench_talk');
  await tx.query('CREATE TABLE IF NOT EXISTS bench_talk (x int)');
  const out: number[] = [];
  for (let i = 0; i < n + WARMUP; i++) {
    const heard = new Promise<number>((r) => rx.once('notification', () => r(wallNow())));
    const t0 = wallNow();
    await tx.query(sql);
    const ms = (await heard) - t0;
    if (i >= WARMUP) out.push(ms);
  }
  await Promise.all([tx.end(), rx.end()]);
  return out;
}

/** Per trial: signal the workflow, time its event and its stream entry reaching `reader`. `offsetMs`: writer's clock minus ours. */
async function follow(reader: WeftEngine, id: string, n: number, offsetMs: number) {
  const stream = reader.readStream(id, 's')[Symbol.asyncIterator]();
  const event: number[] = [];
  const entry: number[] = [];
  for (let i = 0; i < n + WARMUP; i++) {
    const got = reader.getEvent<number>(id, `e${i}`, { timeout: '10s' }).then((v) => wallNow() - ((v as number) - offsetMs));
    const next = stream.next().then((r) => wallNow() - ((r.value as { value: number }).value - offsetMs));
    await reader.signal(id, 'next');
    const [e, s] = await Promise.all([got, next]);
    if (i >= WARMUP) {
      event.push(e);
      entry.push(s);
    }
  }
  await stream.return?.(undefined);
  return { getEventWakeMs: stats(event), streamWriteToReadMs: stats(entry) };
}

const engineOn = (url: string) =>
  WeftEngine.create({
    database: { url, poolSize: 10 },
    schema: 'weft',
    logger: silent,
    shutdownGracePeriod: 0,
    ownership: 'workflow-lease',
  });

async function oneEngine(url: string) {
  const a = await engineOn(url);
  a.register('publisher', Publisher);
  await a.bootstrap();
  try {
    const h = await a.start('publisher', { n: trials + WARMUP }, { workflowId: 'talk-one' });
    return await follow(a, h.workflowId, trials, 0);
  } finally {
    await a.dispose();
  }
}

async function twoProcesses(url: string) {
  const id = 'talk-two';
  const child = spawn(process.execPath, [...TS_NODE_ARGS, path.join(import.meta.dirname, 'talk-writer.ts')], {
    env: { ...process.env, DATABASE_URL: url, TALK_ID: id, TALK_TRIALS: String(trials + WARMUP) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: Array<(e: { event: string; at?: number }) => void> = [];
  let buf = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    for (let i; (i = buf.indexOf('\n')) >= 0; buf = buf.slice(i + 1)) {
      const e = JSON.parse(buf.slice(0, i)) as { event: string; at?: number };
      lines.shift()?.(e);
    }
  });
  const nextLine = () => new Promise<{ event: string; at?: number }>((r) => lines.push(r));
  const b = await engineOn(url);
  await b.bootstrap();
  try {
    if ((await nextLine()).event !== 'ready') throw new Error('the writer process did not start');
    let best = { rtt: Infinity, offset: 0 };
    for (let i = 0; i < 50; i++) {
      const t0 = wallNow();
      const reply = nextLine();
      child.stdin.write('clock\n');
      const at = (await reply).at!;
      const t1 = wallNow();
      if (t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: at - (t0 + t1) / 2 };
    }
    return {
      ...(await follow(b, id, trials, best.offset)),
      clockOffsetMs: round(best.offset, 3),
      clockUncertaintyMs: round(best.rtt / 2, 3),
    };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.stdin.end();
    await exited;
    await b.dispose();
  }
}

/** One SSE client from offset 0: resolves at its `end` event with what it got. */
function sseClient(port: number, p: string, connected: () => void) {
  return new Promise<{ offsets: number; dense: boolean; ended: boolean }>((resolve, reject) => {
    let expect = 0;
    let dense = true;
    let buf = '';
    const req = http.get({ host: '127.0.0.1', port, path: p }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`SSE answered ${res.statusCode}`));
      connected();
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        buf += d;
        for (let i; (i = buf.indexOf('\n\n')) >= 0; buf = buf.slice(i + 2)) {
          const block = buf.slice(0, i);
          if (block.startsWith('event: end') || block.includes('\nevent: end')) {
            req.destroy();
            return resolve({ offsets: expect, dense, ended: true });
          }
          const id = /(?:^|\n)id: (\d+)/.exec(block);
          if (id) {
            if (Number(id[1]) !== expect) dense = false;
            expect++;
          }
        }
      });
      res.on('end', () => resolve({ offsets: expect, dense, ended: false }));
    });
    req.on('error', reject);
  });
}

async function sse(url: string) {
  @Module({
    imports: [WeftModule.forRoot({ database: { url }, schema: 'weft', ownership: 'workflow-lease', shutdownGracePeriod: 0, http: true })],
  })
  class ReaderApp {}
  const app = await NestFactory.create(ReaderApp, { logger: false });
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  const writer = await engineOn(url);
  writer.register('flood', Flood);
  await writer.bootstrap();
  try {
    const h = await writer.start('flood', { n: sseEntries }, { workflowId: 'flood-1' });
    const clients = async (ready?: () => void) => {
      let connected = 0;
      const all = Array.from({ length: sseClients }, () =>
        sseClient(port, `/weft/workflows/${h.workflowId}/streams/s`, () => ++connected === sseClients && ready?.()),
      );
      return all;
    };
    let allConnected!: () => void;
    const connectedAll = new Promise<void>((r) => (allConnected = r));
    const live = await clients(allConnected);
    await connectedAll;
    const t0 = wallNow();
    await h.signal('go');
    const writtenAt = h.result({ timeout: '120s' }).then(() => wallNow());
    const liveGot = await Promise.all(live);
    const liveMs = wallNow() - t0;
    const writeMs = (await writtenAt) - t0;
    const t1 = wallNow();
    const caught = await Promise.all(await clients());
    const catchUpMs = wallNow() - t1;
    const complete = (got: typeof liveGot) => got.every((g) => g.ended && g.dense && g.offsets === sseEntries);
    return {
      entries: sseEntries,
      clients: sseClients,
      writerMs: round(writeMs, 1),
      live: { ms: round(liveMs, 1), entriesPerSecPerClient: Math.round(sseEntries / (liveMs / 1000)), allComplete: complete(liveGot) },
      catchUp: {
        ms: round(catchUpMs, 1),
        entriesPerSecPerClient: Math.round(sseEntries / (catchUpMs / 1000)),
        allComplete: complete(caught),
      },
    };
  } finally {
    await writer.dispose();
    await app.close();
  }
}

const result = await withFreshDatabase(async (url) => {
  const bare = stats(await reference(url, trials, `SELECT pg_notify('bench_talk', 'x')`));
  const commit = stats(
    await reference(url, trials, `WITH i AS (INSERT INTO bench_talk VALUES (1) RETURNING x) SELECT pg_notify('bench_talk', 'x') FROM i`),
  );
  const one = await oneEngine(url);
  const two = await twoProcesses(url);
  const ratios = (r: typeof one) => ({
    getEventP50: round(r.getEventWakeMs.p50 / bare.p50, 2),
    getEventP99: round(r.getEventWakeMs.p99 / bare.p99, 2),
    streamP50: round(r.streamWriteToReadMs.p50 / bare.p50, 2),
    streamP99: round(r.streamWriteToReadMs.p99 / bare.p99, 2),
  });
  // Against the durable floor (not a target): what the path costs beyond one WAL-flushed publish.
  const overCommit = (r: typeof one) => ({
    getEventP50: round(r.getEventWakeMs.p50 / commit.p50, 2),
    streamP50: round(r.streamWriteToReadMs.p50 / commit.p50, 2),
  });
  return {
    trials,
    bareNotifyMs: bare,
    commitNotifyMs: commit,
    oneEngine: { ...one, ratioToBareNotify: ratios(one), ratioToCommitNotify: overCommit(one) },
    twoProcesses: { ...two, ratioToBareNotify: ratios(two), ratioToCommitNotify: overCommit(two) },
    sse: await sse(url),
  };
});
console.log(JSON.stringify({ bench: 'talk-latency', machine: machine(), ...result }, null, 2));
