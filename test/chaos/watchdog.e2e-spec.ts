// The stall watchdog (watchdog.ts) on its own: when it fires, and what its dump says about a client
// that waits forever. The driver here has no engine at all, as under ownership 'lease' while no
// engine is ready: its start waits for one, and the dump must say so.
import { HarnessDb } from './db.js';
import { Driver } from './driver.js';
import { Fleet } from './engines.js';
import { planned } from './check-fixtures.js';
import { rng, until } from './util.js';
import { buildStallReport, describeStall, isStalled } from './watchdog.js';

const OPTS = {
  startWindowMs: 0,
  maxInFlightCalls: 8,
  maxActive: 100,
  messageGapMs: [0, 0] as [number, number],
  updateTimeoutMs: 1000,
  queryChance: 0,
};

describe('chaos stall watchdog', () => {
  const base = { now: 1_000_000, lastProgressAt: 1_000_000 - 200_000, faultsRunning: true, waitingForTail: false, stallWatchMs: 180_000 };

  it('fires when nothing moved for stallWatchMs while faults ran', () => {
    expect(isStalled(base)).toBe(true);
    expect(isStalled({ ...base, lastProgressAt: base.now - 179_000 })).toBe(false);
  });

  it('leaves a quiet spell to the other rules once the faults are over, and while the last starts wait for them', () => {
    expect(isStalled({ ...base, faultsRunning: false })).toBe(false);
    expect(isStalled({ ...base, waitingForTail: true })).toBe(false);
  });

  it('dumps a workflow whose start waits for a live engine as not started, with what its client does', async () => {
    const fleet = new Fleet('unused.ts', () => ({}));
    const db = new HarnessDb('postgres://nobody@127.0.0.1:1/none'); // never queried: no start is answered
    const driver = new Driver(fleet, db, 'weft', OPTS, rng(1), () => 0);
    const stuck = planned('wf00001-suspendable', 'suspendable');
    const done = planned('wf00002-steps', 'steps');
    const running = driver.run([stuck]);
    try {
      const waiting = await until(() => driver.phases.get(stuck.id)?.what === 'start: waiting for a live engine', Date.now() + 10_000, 10);
      expect(waiting).toBe(true);
      const report = buildStallReport({
        plan: [stuck, done],
        statuses: new Map([[done.id, 'completed']]),
        driver,
        engines: [],
        lease: { holder: 'B7', epoch: '12', expiresInMs: 2500 },
        quietMs: 181_000,
      });
      expect(report.unfinished).toBe(1);
      expect(report.byShapeAndStatus).toEqual({ 'suspendable:not started': 1 });
      expect(report.byClientPhase).toEqual({ 'start: waiting for a live engine': 1 });
      expect(report.samples[0]).toMatchObject({
        workflowId: stuck.id,
        status: 'not started',
        client: { scriptRunning: true, startAcknowledged: false, phase: 'start: waiting for a live engine' },
      });
      expect(describeStall(report)).toMatch(
        /^stalled: no workflow changed status .* for 181 s while faults ran; faults stopped; 1 planned workflows unfinished \(suspendable:not started x1\)/,
      );
    } finally {
      driver.stop();
      await running;
      await db.close();
    }
  });
});
