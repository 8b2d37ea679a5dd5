// The invariant checks on synthetic run data (no database, no processes): each detector fires on
// the violation it exists for and stays silent on a legitimate history, so a chaos run reporting
// zero violations means something.
import { body, claim, emptyData, legitimate, noFaults, planned, T, TTL_MS, violationsOf, wfRow, write } from './check-fixtures.js';
import { checkIdleGaps, checkLedger, classifyReruns, classifyTakeovers, FaultWindows } from './checks-safety.js';
import { checkExpiringUpdates, checkFailures, checkFinishedReruns, checkStopWindows } from './checks-shapes.js';
import { checkHistories, checkMessages, checkOutcomes } from './checks-state.js';
import { checkTxRows } from './checks-tx.js';
import type { LedgerRow, OpRow, RunData, WfRow } from './data.js';
import { Tally } from './util.js';
import type { PlannedWorkflow } from './workload.js';

describe('chaos invariant checks', () => {
  it("'txsteps': exactly one application row per recorded step, the recorded body's; none without a record", () => {
    const d = emptyData();
    const op = (seq: number, lid: string): OpRow =>
      ({ workflow_id: 'w-txsteps', seq, kind: 'step', name: `s${seq}`, status: 'completed', result: { v: 1, lid } }) as OpRow;
    d.ops.set('w-txsteps', [op(0, '1'), op(1, '3')]);
    const row = (seq: number, lid: string) => ({ workflow_id: 'w-txsteps', seq, lid, engine: 'A1' });
    const judge = () => {
      const v = new Tally();
      checkTxRows([planned('w-txsteps', 'txsteps')], d, v, new Tally());
      return v.counts;
    };
    d.txRows = [row(0, '1'), row(1, '3')];
    expect(judge()).toEqual({});
    d.txRows = [row(0, '1'), row(1, '3'), row(1, '2'), row(2, '4')];
    expect(judge()).toEqual({ tx_row_duplicated: 1, tx_row_without_record: 1 });
    d.txRows = [row(0, '2')];
    expect(judge()).toEqual({ tx_row_of_another_body: 1, tx_row_missing: 1 });
  });

  it('accept a legitimate failover history', () => {
    expect(violationsOf(legitimate())).toEqual({});
  });

  it('accept an ended workflow whose claim row still names its last holder; flag a row that still fences (decision 0011)', () => {
    const d = legitimate();
    const wf = (status: string, fence: string | null): WfRow => ({
      id: 'w',
      type: 't',
      status,
      output: null,
      error: null,
      parent_id: null,
      completed_ms: null,
      created_ms: T,
      start_at_ms: null,
      fence_epoch: fence,
    });
    d.heldClaims.set('w', { engine_id: 'B1', epoch: '2' });
    d.workflows.set('w', wf('completed', null));
    expect(violationsOf(d)).toEqual({});
    d.workflows.set('w', wf('completed', '2'));
    expect(violationsOf(d)).toEqual({ fence_left_after_terminal: 1 });
    // A live row is fenced at its held claim's epoch, and at none without a holder.
    d.workflows.set('w', wf('running', '2'));
    expect(violationsOf(d)).toEqual({});
    d.workflows.set('w', wf('running', '1'));
    expect(violationsOf(d)).toEqual({ fence_epoch_not_the_claim: 1 });
    d.heldClaims.delete('w');
    d.workflows.set('w', wf('running', '2'));
    expect(violationsOf(d)).toEqual({ fence_epoch_not_the_claim: 1 });
  });

  it('call a claim taken from a live engine an anomaly, unless the run it was held for had ended (decision 0011)', () => {
    const d = legitimate(); // B1 completes the workflow at T + 6000
    d.claimAudit = [claim({ old_epoch: '2', new_epoch: '3', old_engine: 'B1', new_engine: 'C1', writer: 'weft:C1', at_ms: T + 9000 })];
    const notes = new Tally();
    const anomalies = new Tally();
    classifyTakeovers(d, noFaults, TTL_MS, notes, anomalies);
    expect(anomalies.counts).toEqual({});
    expect(notes.counts).toEqual({ 'takeover:run-ended': 1 });
    d.claimAudit = [claim({ old_epoch: '2', new_epoch: '3', old_engine: 'B1', new_engine: 'C1', writer: 'weft:C1', at_ms: T + 5800 })];
    classifyTakeovers(d, noFaults, TTL_MS, notes, anomalies);
    expect(anomalies.counts).toEqual({ claim_taken_from_live_engine: 1 });
  });

  it('flag a write that landed from a deposed engine', () => {
    const d = legitimate();
    d.wfAudit.splice(
      3,
      0,
      write({ old_version: 3, new_version: 4, writer: 'weft:A1', claim_epoch: '2', claim_engine: 'B1', at_ms: T + 5600 }),
    );
    d.wfAudit[4] = { ...d.wfAudit[4], old_version: 4, new_version: 5 };
    expect(violationsOf(d)).toEqual({ deposed_write: 1, write_while_another_engine_holds_claim: 1, two_engines_wrote_one_epoch: 1 });
  });

  it('flag epochs that shrink, jump or are acquired twice, and deleted claims or rewritten operations', () => {
    const d = legitimate();
    d.claimAudit.push(claim({ old_epoch: '2', new_epoch: '1', old_engine: null, new_engine: 'C1', writer: 'weft:C1' }));
    d.claimAudit.push(claim({ old_epoch: '1', new_epoch: '3', old_engine: 'C1', new_engine: 'C1', writer: 'weft:C1' }));
    d.claimAudit.push(claim({ old_epoch: '1', new_epoch: '2', old_engine: 'A1', new_engine: 'C1', writer: 'weft:C1' }));
    d.forbidden.push({ what: 'claim_deleted', workflow_id: 'w', detail: 'epoch 3', writer: 'weft:C1' });
    d.forbidden.push({ what: 'operation_update', workflow_id: 'w', detail: 'seq 0', writer: 'weft:C1' });
    expect(violationsOf(d)).toEqual({
      epoch_regressed: 1,
      epoch_jumped: 1,
      two_engines_acquired_one_epoch: 2,
      claim_deleted: 1,
      operation_update: 1,
    });
  });

  it('flag unfenced writes, writes by non-engines and version gaps', () => {
    const d = legitimate();
    d.wfAudit[1] = { ...d.wfAudit[1], claim_epoch: null, claim_engine: null };
    d.wfAudit[2] = { ...d.wfAudit[2], writer: 'psql', old_version: 5, new_version: 6 };
    expect(violationsOf(d)).toEqual({ unfenced_write: 1, write_by_non_engine: 1, version_not_contiguous: 2 });
  });

  it('excuse a body that was in flight across a pause, and flag one that started after its result was recorded', () => {
    const d = legitimate();
    const pause = { engineId: 'A1', pid: 100, from: T + 100, to: T + 5000 };
    d.ledger = [
      body({ id: '1', started_ms: T + 50, step_started_ms: T + 50, at_ms: T + 5100, op_recorded: true }),
      body({ id: '2', attempt: 2, started_ms: T + 5050, step_started_ms: T + 50, at_ms: T + 5060, op_recorded: true }),
    ];
    expect(violationsOf(d, { ...noFaults, pauses: [pause] })).toEqual({});
    d.ledger.push(body({ id: '3', started_ms: T + 5200, step_started_ms: T + 5200, at_ms: T + 5210, op_recorded: true }));
    expect(violationsOf(d, { ...noFaults, pauses: [pause] })).toEqual({ step_ran_after_result_recorded: 1 });
    const outage = { from: T + 6000, to: T + 8000 };
    d.ledger.push(body({ id: '4', attempt: 3, started_ms: T + 8100, step_started_ms: T + 5900, at_ms: T + 8110, op_recorded: true }));
    expect(violationsOf(d, { ...noFaults, pauses: [pause], pgDown: [outage] })).toEqual({
      step_ran_after_result_recorded: 1,
      'step_ran_after_result_recorded:in_flight_across_postgres_restart': 1,
    });
    // An outage longer than the TTL: no renewal could pass, the claim expired under the body.
    const long = { from: T + 6000, to: T + 6000 + TTL_MS + 1 };
    expect(violationsOf(d, { ...noFaults, pauses: [pause], pgDown: [long] })).toEqual({ step_ran_after_result_recorded: 1 });
  });

  it('excuse a body whose engine a suspend deposed while its step was in flight, not one that started a TTL after it', () => {
    // Engine A1's body was in flight when another engine suspended the workflow; after the resume
    // B1 ran and recorded the step, and A1's body wrote its side effect after that record.
    const d = legitimate();
    d.ledger = [body({ id: '1', started_ms: T + 50, step_started_ms: T + 50, at_ms: T + 1800, op_recorded: true })];
    const check = (stops: FaultWindows['stops']) => {
      const v = new Tally();
      const notes = new Tally();
      checkLedger(d, { ...noFaults, stops }, v, notes, TTL_MS);
      return { violations: v.counts, notes: notes.counts };
    };
    expect(check([{ workflowId: 'w', at: T + 400 }])).toEqual({
      violations: {},
      notes: { 'body_after_result_recorded:excused_deposed_by_suspend_or_cancel': 1 },
    });
    // Another workflow's suspend, or one committed after the body wrote, explains nothing.
    expect(check([{ workflowId: 'x', at: T + 400 }]).violations).toEqual({ step_ran_after_result_recorded: 1 });
    expect(check([{ workflowId: 'w', at: T + 1900 }]).violations).toEqual({ step_ran_after_result_recorded: 1 });
    // A suspend more than a TTL before the step started: the engine had had time to learn of it.
    d.ledger[0] = { ...d.ledger[0], started_ms: T + 5000, step_started_ms: T + 5000, at_ms: T + 5100 };
    expect(check([{ workflowId: 'w', at: T + 1000 }]).violations).toEqual({ step_ran_after_result_recorded: 1 });
  });

  it('explain re-runs by the fault that caused them, in body start order', () => {
    const d = emptyData();
    d.ledger = [
      body({ id: '1', engine: 'B1', started_ms: T + 3000, at_ms: T + 3001 }),
      body({ id: '2', engine: 'A1', started_ms: T + 10, at_ms: T + 6000 }),
      body({ id: '3', workflow_id: 'x', engine: 'A1', started_ms: T, at_ms: T + 1 }),
      body({ id: '4', workflow_id: 'x', engine: 'B1', started_ms: T + 100, at_ms: T + 101 }),
    ];
    const notes = new Tally();
    const anomalies = new Tally();
    const windows = { ...noFaults, pauses: [{ engineId: 'A1', pid: 100, from: T + 20, to: T + 5000 }] };
    expect(classifyReruns(d, windows, notes, anomalies)).toBe(2);
    expect(notes.counts).toEqual({ 'step_rerun:engine-paused': 2 });
    expect(classifyReruns(d, noFaults, notes, anomalies)).toBe(2);
    expect(anomalies.counts).toEqual({ step_rerun_unexplained: 2 });
  });

  it('explain a re-run by a graceful stop the worker turned to after the body started, though SIGTERM was sent before it', () => {
    const d = emptyData();
    d.ledger = [
      body({ id: '1', engine: 'A1', started_ms: T + 5, at_ms: T + 2800 }),
      body({ id: '2', engine: 'B1', started_ms: T + 4000, at_ms: T + 4001 }),
    ];
    const stop = { engineId: 'A1', pid: 100, from: T, to: T + 3000, forced: false };
    const rerun = (windows: FaultWindows) => {
      const notes = new Tally();
      const anomalies = new Tally();
      classifyReruns(d, windows, notes, anomalies);
      return { ...notes.counts, ...anomalies.counts };
    };
    // The worker began to stop 300 ms after the signal: the body, started 5 ms after it, came first.
    expect(rerun({ ...noFaults, gracefulStops: [{ ...stop, stoppingAt: T + 300 }] })).toEqual({
      'step_rerun:engine-stopped-gracefully': 1,
    });
    // Started after the worker turned to the stop (or with no report of when it did): unexplained.
    expect(rerun({ ...noFaults, gracefulStops: [{ ...stop, stoppingAt: T + 2 }] })).toEqual({
      'step_rerun:unexplained': 1,
      step_rerun_unexplained: 1,
    });
    expect(rerun({ ...noFaults, gracefulStops: [stop] })).toEqual({ 'step_rerun:unexplained': 1, step_rerun_unexplained: 1 });
  });

  it('explain a re-run by a suspend committed elsewhere up to a TTL before the first body started', () => {
    // Another engine suspended the workflow (rotating its claim); the owner learns of it at its
    // next fenced write, so a body can start just after the suspend; after the resume it runs again.
    const d = emptyData();
    d.ledger = [
      body({ id: '1', workflow_id: 's', engine: 'B1', started_ms: T + 1000, at_ms: T + 1001 }),
      body({ id: '2', workflow_id: 's', engine: 'B1', started_ms: T + 2000, at_ms: T + 2001 }),
    ];
    const windows = { ...noFaults, stops: [{ workflowId: 's', at: T + 900 }] };
    const notes = new Tally();
    const anomalies = new Tally();
    expect(classifyReruns(d, windows, notes, anomalies, 3000)).toBe(1);
    expect(notes.counts).toEqual({ 'step_rerun:suspended-and-resumed': 1 });
    expect(anomalies.counts).toEqual({});
    // A suspend longer than a TTL before the body does not explain it.
    expect(classifyReruns(d, { ...noFaults, stops: [{ workflowId: 's', at: T - 5000 }] }, notes, anomalies, 3000)).toBe(1);
    expect(anomalies.counts).toEqual({ step_rerun_unexplained: 1 });
  });

  it('flag wrong outputs, unfinished workflows, history gaps, foreign results and lost messages', () => {
    const d = emptyData();
    const plan = (id: string) => planned(id);
    const row = wfRow;
    const op = (wf: string, seq: number, lid: string, v: number): OpRow => ({
      workflow_id: wf,
      seq,
      kind: 'step',
      name: `s${seq}`,
      status: 'completed',
      result: { v, lid },
    });
    d.workflows.set('ok', row('ok', 'completed', { sum: 21 }));
    d.workflows.set('bad', row('bad', 'completed', { sum: 22 }));
    d.workflows.set('stuck', row('stuck', 'running', null));
    d.ops.set('ok', [op('ok', 0, '1', 7), op('ok', 1, '2', 14)]);
    d.ops.set('bad', [op('bad', 0, '3', 7), op('bad', 2, '9', 15)]);
    d.ledger = [
      body({ id: '1', workflow_id: 'ok', seq: 0 }),
      body({ id: '2', workflow_id: 'ok', seq: 1 }),
      body({ id: '3', workflow_id: 'bad', seq: 0, engine: 'B1' }),
    ];
    for (const [k, w] of [
      ['ok#0', 'weft:A1'],
      ['ok#1', 'weft:A1'],
      ['bad#0', 'weft:A1'],
    ])
      d.opWriters.set(k, w);
    d.messages = [
      {
        id: '5',
        workflow_id: 'ok',
        kind: 'signal',
        name: 'finish',
        payload: { token: 't' },
        consumed_seq: null,
        status: 'pending',
        result: null,
        created_ms: T,
      },
    ];
    const v = new Tally();
    const plans = ['ok', 'bad', 'stuck'].map(plan);
    checkOutcomes(plans, d, v);
    checkHistories(plans, d, new Map([['ok', d.messages]]), v);
    checkMessages(d, new Map([['ok', d.messages]]), v, new Tally());
    expect(v.counts).toEqual({
      wrong_output: 1,
      not_terminal: 1,
      history_not_contiguous: 1,
      history_step_order: 1,
      step_result_wrong: 1,
      step_recorded_without_its_body: 1,
      step_result_committed_by_another_engine: 1,
      message_never_consumed: 1,
    });
  });

  it('accept a cancelled history whose code took the cancel (its steps, then the cancel once, last); flag a cancel out of place or twice', () => {
    const d = emptyData();
    const step = (wf: string, seq: number, lid: string): OpRow => ({
      workflow_id: wf,
      seq,
      kind: 'step',
      name: `s${seq}`,
      status: 'completed',
      result: { v: 7 * (seq + 1), lid },
    });
    const cancel = (wf: string, seq: number): OpRow => ({
      workflow_id: wf,
      seq,
      kind: 'cancelRequested',
      name: 'cancel',
      status: 'completed',
      result: { reason: 'chaos' },
    });
    // 'ok': s0 recorded, s1 in flight at the cancel (seq 1 never recorded), the cancel at seq 2.
    d.ops.set('ok', [step('ok', 0, '1'), cancel('ok', 2)]);
    d.ops.set('late', [step('late', 0, '2'), cancel('late', 3)]);
    d.ops.set('twice', [cancel('twice', 1), cancel('twice', 2)]);
    d.ledger = [body({ id: '1', workflow_id: 'ok', seq: 0 }), body({ id: '2', workflow_id: 'late', seq: 0 })];
    d.opWriters.set('ok#0', 'weft:A1');
    d.opWriters.set('late#0', 'weft:A1');
    const plans = ['ok', 'late', 'twice'].map((id) => {
      d.workflows.set(id, wfRow(id, 'cancelled', null, 'chaos.busycancel'));
      return planned(id, 'busycancel', { allowedStatuses: ['completed', 'cancelled'] });
    });
    const v = new Tally();
    checkHistories(plans, d, new Map(), v);
    expect(v.counts).toEqual({ cancel_out_of_place: 2, cancel_recorded_twice: 1 });
  });

  it('report a running workflow that sat idle too long', () => {
    const d = legitimate();
    const a = new Tally();
    checkIdleGaps(d, 1000, a);
    expect(a.counts).toEqual({ workflow_idle_too_long: 1 });
  });

  describe('issue #12 shapes', () => {
    const opts = { ttlMs: 2000, renewMs: 500, shutdownGraceMs: 1000, claimWindowMs: 3500 };
    const finished = (l: Partial<LedgerRow>) => body({ finished_ms: T + 100, finished_aborted: false, ...l });
    const rerunKinds = (d: RunData, w: FaultWindows) => {
      const v = new Tally();
      const notes = new Tally();
      const anomalies = new Tally();
      checkFinishedReruns(d, w, opts, v, notes, anomalies);
      return { violations: v.counts, notes: notes.counts, anomalies: anomalies.counts };
    };
    const rerunAfterFinish = () => {
      const d = emptyData();
      d.ledger = [finished({ id: '1' }), body({ id: '2', engine: 'B1', pid: 200, started_ms: T + 5000, at_ms: T + 5001 })];
      return d;
    };

    it('flag a finished step body that ran again with no fault to explain it, and one finished within a graceful stop', () => {
      expect(rerunKinds(rerunAfterFinish(), noFaults).violations).toEqual({ finished_step_rerun_in_live_engine: 1 });
      const stop = { engineId: 'A1', pid: 100, from: T + 150, to: T + 400, forced: false };
      expect(rerunKinds(rerunAfterFinish(), { ...noFaults, gracefulStops: [stop] }).violations).toEqual({
        'finished_step_rerun_in_live_engine:after_graceful_stop': 1,
      });
      const short = { from: T + 150, to: T + 1000 };
      expect(rerunKinds(rerunAfterFinish(), { ...noFaults, pgDown: [short] }).violations).toEqual({
        'finished_step_rerun_in_live_engine:across_postgres_restart': 1,
      });
    });

    it('excuse a finished body re-run after its engine was killed or paused, its claim was taken over, the workflow suspended, or a long outage', () => {
      const kill = { engineId: 'A1', at: T + 200, crash: false };
      expect(rerunKinds(rerunAfterFinish(), { ...noFaults, kills: [kill] })).toEqual({
        violations: {},
        notes: { 'finished_rerun_excused:engine-killed': 1 },
        anomalies: {},
      });
      const long = { from: T + 150, to: T + 2500 };
      expect(rerunKinds(rerunAfterFinish(), { ...noFaults, pgDown: [long] }).notes).toEqual({
        'finished_rerun_excused:postgres-outage-longer-than-ttl': 1,
      });
      expect(rerunKinds(rerunAfterFinish(), { ...noFaults, stops: [{ workflowId: 'w', at: T + 120 }] }).notes).toEqual({
        'finished_rerun_excused:suspended-or-cancelled': 1,
      });
      const taken = rerunAfterFinish();
      taken.claimAudit = [
        claim({ old_epoch: '1', new_epoch: '2', old_engine: 'A1', new_engine: 'B1', writer: 'weft:B1', at_ms: T + 4000 }),
      ];
      expect(rerunKinds(taken, { ...noFaults, pauses: [] }).anomalies).toEqual({
        finished_step_rerun_after_claim_taken_from_live_engine: 1,
      });
      const stop = { engineId: 'A1', pid: 100, from: T - 2000, to: T + 400, forced: false };
      expect(rerunKinds(rerunAfterFinish(), { ...noFaults, gracefulStops: [stop] }).notes).toEqual({
        'finished_rerun_excused:finished-after-the-grace-period': 1,
      });
    });

    it('flag a workflow failed by a shutdown, and any other failure', () => {
      const d = emptyData();
      const failed = (id: string, error: unknown) => ({
        id,
        type: 'chaos.steps',
        status: 'failed',
        output: null,
        error,
        parent_id: null,
        completed_ms: T,
        created_ms: T,
        start_at_ms: null,
      });
      d.workflows.set('a', failed('a', { name: 'EngineDisposedError', message: 'This WeftEngine has been disposed' }));
      d.workflows.set('b', failed('b', { name: 'Error', message: 'boom' }));
      d.workflows.set('c', failed('c', { name: 'Error', message: 'boom' }));
      d.wfAudit = [write({ workflow_id: 'c', new_status: 'failed', writer: 'weft:A1', at_ms: T + 10 })];
      const v = new Tally();
      checkFailures([], d, { ...noFaults, gracefulStops: [{ engineId: 'A1', pid: 100, from: T, to: T + 500, forced: false }] }, v);
      expect(v.counts).toEqual({ failed_by_shutdown: 2, failed_unexpectedly: 1 });
    });

    it('flag a body after a cancel under a claim acquired after it, or past the in-flight window; note one inside it', () => {
      const d = emptyData();
      d.wfAudit = [write({ old_status: 'running', new_status: 'cancelled', writer: 'weft:B1', claim_engine: null, at_ms: T + 1000 })];
      d.claimAudit = [
        claim({ tg_op: 'INSERT', new_epoch: '1', new_engine: 'A1' }),
        claim({ old_epoch: '1', new_epoch: '2', old_engine: 'A1', new_engine: null, writer: 'weft:B1', at_ms: T + 1000 }),
        claim({ old_epoch: '2', new_epoch: '3', old_engine: null, new_engine: 'A1', at_ms: T + 1050 }),
      ];
      d.ledger = [
        body({ id: '1', started_ms: T + 1100, claim_epoch: '1', claim_engine: 'A1' }),
        body({ id: '2', seq: 1, started_ms: T + 1200, claim_epoch: '3', claim_engine: 'A1' }),
        body({ id: '3', seq: 2, started_ms: T + 5000, claim_epoch: '2', claim_engine: null }),
        // Started 20 ms after the cancel, under epoch 1; its row, written late, saw epoch 3 (acquired after it began).
        body({ id: '4', seq: 3, started_ms: T + 1020, claim_epoch: '3', claim_engine: 'A1' }),
      ];
      const v = new Tally();
      const notes = new Tally();
      checkStopWindows(d, noFaults, opts, v, notes);
      expect(v.counts).toEqual({ 'step_ran_after_cancel:under_claim_acquired_after_it': 1, step_ran_after_cancel: 1 });
      expect(notes.counts).toEqual({ 'body_after_cancel:in_flight_window': 2 });
    });

    it('accept an external transition that rotated the claim, and fence lease-mode writes by the global lease', () => {
      const d = legitimate();
      d.wfAudit.push(
        write({ old_version: 4, new_version: 5, old_status: 'running', new_status: 'suspended', claim_epoch: '3', claim_engine: null }),
      );
      expect(violationsOf(d)).toEqual({});
      const l = emptyData();
      l.ownership = 'lease';
      l.claimAudit = [claim({ workflow_id: '~lease', tg_op: 'INSERT', new_epoch: '1', new_engine: 'A1' })];
      l.wfAudit = [
        write({ tg_op: 'INSERT', old_version: null, new_version: 1, claim_epoch: '1', claim_engine: 'A1' }),
        write({ old_version: 1, new_version: 2, claim_epoch: '1', claim_engine: 'A1' }),
        write({ old_version: 2, new_version: 3, writer: 'weft:B1', claim_epoch: '1', claim_engine: 'A1' }),
      ];
      expect(violationsOf(l)).toEqual({ deposed_write: 1, write_while_another_engine_holds_claim: 1, two_engines_wrote_one_epoch: 1 });
    });

    it('flag an update reported timed out that was applied, and an expired request that was consumed', () => {
      const d = emptyData();
      const plan = { id: 'x', shape: 'expiring' } as PlannedWorkflow;
      const msg = (id: string, token: string, status: string, seq: number | null, value?: number) => ({
        id,
        workflow_id: 'x',
        kind: 'update',
        name: 'bump',
        payload: { token },
        consumed_seq: seq,
        status,
        result: value === undefined ? null : { value },
        created_ms: T,
      });
      d.messages = [msg('1', 'a', 'done', 3, 1), msg('2', 'b', 'expired', 4), msg('3', 'c', 'done', 5, 2)];
      const v = new Tally();
      const outcomes = [
        { token: 'a', timeoutMs: 50, outcome: 'timed_out' as const },
        { token: 'c', timeoutMs: 50, outcome: 'applied' as const, value: 2 },
      ];
      checkExpiringUpdates([plan], d, new Map([['x', outcomes]]), v, new Tally());
      expect(v.counts).toEqual({ update_timed_out_but_applied: 1, expired_update_consumed: 1 });
    });
  });
});
