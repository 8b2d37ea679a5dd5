// The checks of 'cancelcleanup' (issue #38) on synthetic run data (no database, no processes):
// cleanup ran to completion or the workflow is still running, no cancel lost, heartbeat progress
// never behind a saved heartbeat. Each fires on the violation it exists for and stays silent on a
// legitimate run.
import { body, claim, emptyData, noFaults, T, wfRow } from './check-fixtures.js';
import { checkCancelsKept, checkCleanups, checkHeartbeats } from './checks-cleanup.js';
import { checkHistories, checkMessages, checkOutcomes } from './checks-state.js';
import type { OpRow, ProgressAuditRow, RunData } from './data.js';
import type { CancelOutcome } from './driver.js';
import { Tally } from './util.js';
import { blank, type PlannedWorkflow } from './workload.js';

const ID = 'w-cancelcleanup';
const SALT = 10;
const value = (i: number) => SALT + 7 * (i + 1);

const shape = (): PlannedWorkflow => ({
  ...blank(ID, 'cancelcleanup', { steps: 3, stepMs: 100, salt: SALT, chunks: 6, cleanupSteps: 3, stallStep: -1 }),
  allowedStatuses: ['completed', 'cancelled'],
  expectedOutput: { sum: value(0) + value(1) + value(2) },
  expectedKinds: { step: 3 },
});

/** A recorded op; a step names its ledger body (id = seq + 1), which A1 ran and recorded. */
function history(d: RunData, ops: Array<[seq: number, kind: string, name: string]>): void {
  const rows: OpRow[] = [];
  for (const [seq, kind, name] of ops) {
    const step = kind === 'step';
    const lid = String(seq + 1);
    rows.push({ workflow_id: ID, seq, kind, name, status: 'completed', result: step ? { v: value(Number(name.slice(1))), lid } : null });
    if (!step) continue;
    d.ledger.push(body({ id: lid, workflow_id: ID, seq, progress_from: -1 }));
    d.opWriters.set(`${ID}#${seq}`, 'weft:A1');
  }
  d.ops.set(ID, rows);
}

/** s0 recorded, s1 in flight at the cancel (seq 1, never recorded), the cancel at seq 2, then `cleanup`. */
function cancelled(cleanup: Array<[number, string, string]>): RunData {
  const d = emptyData();
  d.workflows.set(ID, wfRow(ID, 'cancelled', null, 'chaos.cancelcleanup'));
  history(d, [[0, 'step', 's0'], [2, 'cancelRequested', 'cancel'], ...cleanup]);
  return d;
}

const FULL: Array<[number, string, string]> = [
  [3, 'step', 'c0'],
  [4, 'sleep', 'sleep'],
  [5, 'step', 'c1'],
  [6, 'step', 'c2'],
];

function judge(d: RunData) {
  const v = new Tally();
  const notes = new Tally();
  const w = shape();
  checkOutcomes([w], d, v);
  checkHistories([w], d, new Map(), v);
  checkCleanups([w], d, v, notes);
  return { violations: v.counts, notes: notes.counts };
}

describe("chaos checks of 'cancelcleanup' (issue #38)", () => {
  describe('cleanup ran to completion or the workflow is still running', () => {
    it('accept a cancelled workflow whose whole cleanup is recorded after the cancel, each step once with its body', () => {
      expect(judge(cancelled(FULL))).toEqual({ violations: {}, notes: { cleanup_completed: 1 } });
    });

    it('flag a cancelled workflow whose cleanup stopped part way, or never ran (its cancel recorded no cleanup)', () => {
      expect(judge(cancelled(FULL.slice(0, 2))).violations).toEqual({ cleanup_incomplete: 1 });
      const d = emptyData();
      d.workflows.set(ID, wfRow(ID, 'cancelled', null, 'chaos.cancelcleanup'));
      history(d, [[0, 'step', 's0']]); // ended cancelled with no cleanup (e.g. a grace period that ran out)
      expect(judge(d).violations).toEqual({ cleanup_incomplete: 1 });
    });

    it('flag a cleanup step recorded twice, a cleanup out of order, and one whose step has no body', () => {
      expect(judge(cancelled([...FULL, [7, 'step', 'c2']])).violations).toEqual({ cleanup_step_recorded_twice: 1 });
      expect(
        judge(
          cancelled([
            [3, 'step', 'c0'],
            [4, 'step', 'c1'],
            [5, 'sleep', 'sleep'],
            [6, 'step', 'c2'],
          ]),
        ).violations,
      ).toEqual({ cleanup_out_of_order: 1 });
      const d = cancelled(FULL);
      d.ledger = d.ledger.filter((l) => l.seq !== 5); // c1's side effect never happened
      expect(judge(d).violations).toEqual({ step_recorded_without_its_body: 1 });
    });

    it('flag a workflow still running at the end (stuck), and a completed one that ran a cleanup', () => {
      const d = cancelled(FULL.slice(0, 1));
      d.workflows.set(ID, wfRow(ID, 'running', null, 'chaos.cancelcleanup'));
      expect(judge(d).violations).toEqual({ not_terminal: 1 });
      const done = cancelled(FULL);
      done.workflows.set(ID, wfRow(ID, 'completed', { sum: 60 }, 'chaos.cancelcleanup'));
      expect(judge(done).violations).toMatchObject({ history_shape: 1 });
    });
  });

  describe('no cancel lost', () => {
    const acked: CancelOutcome = { starter: null, engine: 'B1', sentAt: T, outcome: 'cancelled', attempts: 1 };
    const cancelMsg = (createdMs: number, consumedSeq: number | null = null): RunData['messages'][number] => ({
      id: '9',
      workflow_id: ID,
      kind: 'cancel',
      name: 'cancel',
      payload: null,
      consumed_seq: consumedSeq,
      status: 'pending',
      result: null,
      created_ms: createdMs,
    });
    /** Completed: s0, s1, s2 recorded; bodies started 1 s apart from T (under A1's claim epoch 1, acquired at T - 100). */
    const completed = (msgs: RunData['messages']): RunData => {
      const d = emptyData();
      d.workflows.set(ID, wfRow(ID, 'completed', { sum: value(0) + value(1) + value(2) }, 'chaos.cancelcleanup'));
      history(d, [
        [0, 'step', 's0'],
        [1, 'step', 's1'],
        [2, 'step', 's2'],
      ]);
      d.ledger = d.ledger.map((l) => ({ ...l, started_ms: T + 1000 * l.seq, step_started_ms: T + 1000 * l.seq }));
      d.claimAudit = [claim({ workflow_id: ID, tg_op: 'INSERT', new_epoch: '1', new_engine: 'A1', at_ms: T - 100 })];
      d.messages = msgs;
      return d;
    };
    const kept = (d: RunData, windows = noFaults) => {
      const v = new Tally();
      const notes = new Tally();
      checkCancelsKept([shape()], d, new Map([[ID, acked]]), windows, { deliveryMs: 1500 }, v, notes);
      return { violations: v.counts, notes: notes.counts };
    };

    it('accept an acknowledged cancel that ended the workflow cancelled, or that came as it ended (the anomaly path)', () => {
      const d = cancelled(FULL);
      d.messages = [cancelMsg(T, 2)];
      expect(kept(d)).toEqual({ violations: {}, notes: { 'cancel_acknowledged:cancelled': 1 } });
      const late = completed([cancelMsg(T + 2500)]); // stored while s2 (started at T + 2000) ran to the end
      expect(kept(late)).toEqual({ violations: {}, notes: { 'cancel_acknowledged:completed': 1 } });
      const a = new Tally();
      checkMessages(late, new Map([[ID, late.messages]]), new Tally(), a);
      expect(a.counts).toEqual({ cancel_requested_as_it_ended: 1 });
    });

    it('flag an acknowledged cancel of a completed workflow that is not stored', () => {
      expect(kept(completed([])).violations).toEqual({ cancel_acknowledged_but_not_stored: 1 });
    });

    it('flag a completed workflow that began a step well after the cancel was stored (it waited and did not take it)', () => {
      expect(kept(completed([cancelMsg(T + 100)])).violations).toEqual({ cancel_lost: 1 });
      // An engine paused, or PostgreSQL away, in between delays the delivery: excused.
      const paused = { ...noFaults, pauses: [{ engineId: 'A1', pid: 100, from: T + 500, to: T + 1800 }] };
      expect(kept(completed([cancelMsg(T + 100)]), paused)).toEqual({
        violations: {},
        notes: { 'cancel_acknowledged:completed': 1, 'cancel_late_excused:engine-paused': 1 },
      });
    });

    it('flag a completed workflow whose run was loaded by an engine that took its claim after the cancel was stored', () => {
      const d = completed([cancelMsg(T + 1500)]); // within the delivery bound of s2's start...
      d.claimAudit.push(
        claim({ workflow_id: ID, old_epoch: '1', new_epoch: '2', old_engine: 'A1', new_engine: 'B1', writer: 'weft:B1', at_ms: T + 1900 }),
      );
      d.ledger = d.ledger.map((l) => (l.seq === 2 ? { ...l, engine: 'B1', claim_epoch: '2', claim_engine: 'B1' } : l));
      d.opWriters.set(`${ID}#2`, 'weft:B1');
      // ...but B1 loaded the run, request included, and still ran s2 to the end.
      expect(kept(d).violations).toEqual({ 'cancel_lost:loaded_after_it': 1 });
    });
  });

  describe('heartbeat progress never goes backwards past a saved heartbeat', () => {
    const saved = (done: number, writer: string, at: number, attempt = 1): ProgressAuditRow => ({
      workflow_id: ID,
      seq: 0,
      attempt,
      done,
      writer,
      at_ms: at,
    });
    /** s0's first body on A1 (epoch 1 from T), A1 killed; B1 takes epoch 2 at T + 5000 and runs attempt 2 resuming after `from`. */
    const takeover = (from: number, progress: ProgressAuditRow[]): RunData => {
      const d = emptyData();
      d.claimAudit = [
        claim({ workflow_id: ID, tg_op: 'INSERT', new_epoch: '1', new_engine: 'A1', at_ms: T }),
        claim({ workflow_id: ID, old_epoch: '1', new_epoch: '2', old_engine: 'A1', new_engine: 'B1', writer: 'weft:B1', at_ms: T + 5000 }),
      ];
      d.ledger = [
        body({ id: '1', workflow_id: ID, seq: 0, started_ms: T + 10, progress_from: -1 }),
        body({
          id: '2',
          workflow_id: ID,
          seq: 0,
          attempt: 2,
          engine: 'B1',
          claim_epoch: '2',
          claim_engine: 'B1',
          started_ms: T + 5100,
          progress_from: from,
        }),
      ];
      d.progressAudit = progress;
      return d;
    };
    const beats = (d: RunData) => {
      const v = new Tally();
      const notes = new Tally();
      checkHeartbeats(d, v, notes);
      return { violations: v.counts, notes: notes.counts };
    };

    it('accept a takeover that resumes from the last heartbeat saved before it (a deposed late save does not count)', () => {
      const d = takeover(3, [saved(1, 'weft:A1', T + 1000), saved(3, 'weft:A1', T + 2000), saved(5, 'weft:A1', T + 5050)]);
      expect(beats(d)).toEqual({ violations: {}, notes: { 'heartbeat_resumed:from_start': 1, 'heartbeat_resumed:from_heartbeat': 1 } });
    });

    it('flag a takeover that resumes behind a heartbeat saved before it took the claim', () => {
      expect(beats(takeover(1, [saved(1, 'weft:A1', T + 1000), saved(3, 'weft:A1', T + 2000)])).violations).toEqual({
        heartbeat_progress_lost: 1,
      });
      expect(beats(takeover(-1, [saved(0, 'weft:A1', T + 1000)])).violations).toEqual({ heartbeat_progress_lost: 1 });
    });

    it('flag a retry on the same engine that resumes behind a heartbeat that engine saved before the retry began', () => {
      const d = takeover(-1, [saved(2, 'weft:A1', T + 1000)]);
      d.claimAudit = d.claimAudit.slice(0, 1);
      d.ledger[1] = { ...d.ledger[1], engine: 'A1', claim_epoch: '1', claim_engine: 'A1', progress_from: 1 };
      expect(beats(d).violations).toEqual({ heartbeat_progress_lost: 1 });
      d.ledger[1].progress_from = 2;
      expect(beats(d).violations).toEqual({});
    });
  });
});
