import 'reflect-metadata';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { WeftEngine, WeftModule, type StreamEntry } from '@weft/nest';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor, within } from './support/engine.js';
import { EngineProcesses, fixture } from './support/processes.js';

/**
 * Workflows that talk (docs/events-and-streams.md) across engine PROCESSES under 'workflow-lease'
 * (claims of 1 s): engines are test/fixtures/talk-engine.ts, each owning only the types it registers.
 */
describe('signals between workflows and streams across engine processes', () => {
  let tdb: TestDatabase;
  const procs = new EngineProcesses(fixture('talk-engine'), () => ({ DATABASE_URL: tdb.url }));
  const engine = (id: string, env: Record<string, string>) => procs.ready(id, env);
  const q = <R = Record<string, unknown>>(sql: string, params?: unknown[]) => tdb.query<R>(sql, params);

  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await procs.killAll();
    await tdb?.drop();
  });

  it('ctx.signalWorkflow to a workflow another engine owns: delivered exactly once though the sender’s engine is SIGKILLed right after', async () => {
    const senders = ['snd-1', 'snd-2', 'snd-3', 'snd-4'];
    // T owns the target; A owns the senders and dies in the first step after a signal was recorded.
    const t = await engine('T', { TYPES: 'inbox', START: JSON.stringify([{ type: 'inbox', input: { n: 4 }, workflowId: 'target' }]) });
    await t.waitEvent('started');
    const a = await engine('A', {
      TYPES: 'sender',
      KILL_AFTER_SEND: '1',
      START: JSON.stringify(senders.map((id) => ({ type: 'sender', input: { target: 'target' }, workflowId: id }))),
    });
    expect(await a.exited).toBeNull(); // killed by a signal, not an exit
    // A died after at least one call was recorded, and its signal was stored by that same commit.
    const recorded = await q<{ workflow_id: string }>(
      `SELECT workflow_id FROM weft.weft_operations WHERE kind = 'signalWorkflow' AND status = 'completed' ORDER BY workflow_id`,
    );
    expect(recorded.length).toBeGreaterThanOrEqual(1);
    const sentBefore = await q<{ payload: string }>(
      `SELECT payload #>> '{}' AS payload FROM weft.weft_messages WHERE workflow_id = 'target'`,
    );
    expect(sentBefore.map((m) => m.payload).sort()).toEqual(recorded.map((r) => r.workflow_id));

    // C takes the senders over once A's claims lapse, replays the recorded calls and sends only the missing ones.
    await engine('C', { TYPES: 'sender' });
    await waitFor(
      async () => (await q(`SELECT 1 FROM weft.weft_workflows WHERE id = ANY($1) AND status = 'completed'`, [senders])).length === 4,
      'the four senders completed on C',
      60_000,
      100,
    );
    await waitFor(
      async () => (await q(`SELECT 1 FROM weft.weft_workflows WHERE id = 'target' AND status = 'completed'`)).length === 1,
      'the target completed',
      30_000,
      100,
    );
    // Exactly once: one stored signal per sender, each consumed once by the target's run.
    const messages = await q<{ payload: string; consumed: boolean }>(
      `SELECT payload #>> '{}' AS payload, consumed_seq IS NOT NULL AS consumed FROM weft.weft_messages
       WHERE workflow_id = 'target' AND name = 'ping' ORDER BY payload`,
    );
    expect(messages).toEqual(senders.map((payload) => ({ payload, consumed: true })));
    const [target] = await q<{ output: string[] }>(`SELECT output FROM weft.weft_workflows WHERE id = 'target'`);
    expect([...target.output].sort()).toEqual(senders);
    const calls = await q<{ workflow_id: string; n: number }>(
      `SELECT workflow_id, count(*)::int AS n FROM weft.weft_operations WHERE kind = 'signalWorkflow' GROUP BY workflow_id ORDER BY workflow_id`,
    );
    expect(calls).toEqual(senders.map((workflow_id) => ({ workflow_id, n: 1 })));
    // Every sender's last step ran on C: A died in it (or before it).
    const after = await q<{ result: string }>(
      `SELECT result #>> '{}' AS result FROM weft.weft_operations WHERE kind = 'step' AND name = 'after' AND workflow_id = ANY($1)`,
      [senders],
    );
    expect(after.map((r) => r.result)).toEqual(['C', 'C', 'C', 'C']);
  });

  describe('a stream followed across a takeover of its writer', () => {
    let app: INestApplication;
    let reader: WeftEngine;
    let port: number;

    beforeAll(async () => {
      // The readers' process: an engine that owns nothing (it registers no type) and its HTTP routes.
      const moduleRef = await Test.createTestingModule({
        imports: [
          WeftModule.forRoot({
            database: { url: tdb.url },
            schema: 'weft',
            ownership: 'workflow-lease',
            shutdownGracePeriod: 0,
            http: true,
          }),
        ],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.listen(0, '127.0.0.1');
      port = (app.getHttpServer().address() as AddressInfo).port;
      reader = app.get(WeftEngine);
    });
    afterAll(async () => {
      await app?.close();
    });

    /** One SSE connection: the entries it got (id, data) until the server's `end` or `stopAfter` entries. */
    const sse = (path: string, lastEventId: string | undefined, stopAfter: number) =>
      new Promise<{ entries: Array<{ id: string; entry: StreamEntry }>; ended: boolean }>((resolve, reject) => {
        const entries: Array<{ id: string; entry: StreamEntry }> = [];
        const req = http.get(
          { host: '127.0.0.1', port, path, headers: lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId } },
          (res) => {
            if (res.statusCode !== 200) return reject(new Error(`SSE answered ${res.statusCode}`));
            res.setEncoding('utf8');
            let buf = '';
            let done = false;
            const finish = (ended: boolean) => {
              if (done) return;
              done = true;
              req.destroy();
              resolve({ entries, ended });
            };
            res.on('data', (d: string) => {
              buf += d;
              let i: number;
              while (!done && (i = buf.indexOf('\n\n')) >= 0) {
                const block = buf.slice(0, i);
                buf = buf.slice(i + 2);
                const f = Object.fromEntries(block.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
                if (f.event === 'end') finish(true);
                else if (f.event === 'entry') {
                  entries.push({ id: f.id, entry: JSON.parse(f.data) as StreamEntry });
                  if (entries.length >= stopAfter) finish(false);
                }
              }
            });
            res.on('end', () => finish(false));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
      });

    it('readStream and SSE (reconnecting with Last-Event-ID) see every offset once, dense, in order, across the SIGKILL of the writer', async () => {
      const N = 80;
      const id = 'stream-1';
      const a = await engine('A2', {
        TYPES: 'writer',
        START: JSON.stringify([{ type: 'writer', input: { n: N, stepMs: 25 }, workflowId: id }]),
      });
      await a.waitEvent('started');
      const engineGot: StreamEntry[] = [];
      const viaEngine = (async () => {
        for await (const e of reader.readStream(id, 's')) engineGot.push(e);
        return engineGot;
      })();
      // An SSE client that drops its connection every 7 entries and resumes from the last id it got.
      const sseGot: Array<{ id: string; entry: StreamEntry }> = [];
      const viaSse = (async () => {
        const got = sseGot;
        let last: string | undefined;
        for (let round = 0; round < 200; round++) {
          const r = await sse(`/weft/workflows/${id}/streams/s`, last, 7);
          got.push(...r.entries);
          if (r.entries.length) last = r.entries[r.entries.length - 1].id;
          if (r.ended) return got;
        }
        throw new Error('the SSE stream never ended');
      })();

      const count = async () =>
        (await q<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_stream_entries WHERE workflow_id = $1`, [id]))[0].n;
      await waitFor(async () => (await count()) >= 20, '20 entries written on A2', 30_000);
      await procs.kill(a);
      const atKill = await count();
      expect(atKill).toBeLessThan(N);
      await engine('C2', { TYPES: 'writer' });

      // Each reader with a deadline that says how far it got: a reader that misses an entry waits on.
      const last = (got: Array<{ offset: number }>) => (got.length ? got[got.length - 1].offset : 'none');
      const byEngine = await within(() => `readStream to end (last offset ${last(engineGot)})`, 30_000, viaEngine);
      const bySse = await within(() => `the SSE reader to end (last offset ${last(sseGot.map((g) => g.entry))})`, 30_000, viaSse);
      const dense = Array.from({ length: N }, (_, i) => i);
      expect(byEngine.map((e) => e.offset)).toEqual(dense);
      // Written from workflow code: exactly once, so each value is its offset, across the takeover too.
      expect(byEngine.map((e) => e.value)).toEqual(dense);
      expect(bySse.map((e) => Number(e.id))).toEqual(dense);
      expect(bySse.map((e) => [e.entry.offset, e.entry.value])).toEqual(dense.map((i) => [i, i]));
      const rows = await q<{ offset: number }>(`SELECT "offset" FROM weft.weft_stream_entries WHERE workflow_id = $1 ORDER BY "offset"`, [
        id,
      ]);
      expect(rows.map((r) => r.offset)).toEqual(dense);
      // C2 wrote the rest: the takeover happened mid-stream.
      const ticks = await q<{ result: string }>(
        `SELECT result #>> '{}' AS result FROM weft.weft_operations WHERE workflow_id = $1 AND kind = 'step' ORDER BY seq`,
        [id],
      );
      expect(ticks.some((t) => t.result === 'A2') && ticks.some((t) => t.result === 'C2')).toBe(true);
    });
  });
});
