// The checks of issue #32's edge shapes on synthetic run data (no database, no processes): each
// fires on the violation it exists for and stays silent on a legitimate run.
import { emptyData, legitimate, planned, T, violationsOf, wfRow, write } from './check-fixtures.js';
import { checkChains, expectedDeletes } from './checks-edges.js';
import { checkIdleGaps } from './checks-safety.js';
import { checkOutcomes } from './checks-state.js';
import type { ChainSend } from './driver-edges.js';
import { Tally } from './util.js';

describe('chaos checks of the edge shapes (issue #32)', () => {
  const chain = planned('c', 'chain', { expectedOutput: { runs: 3, total: 30, tokens: ['c:m0', 'c:m1'] } });
  const send = (token: string, acked = true, attempts = 1): ChainSend => ({ token, kind: 'signal', acked, attempts });
  const chainRun = (tokens: string[], deliveries: Record<string, number>) => {
    const d = emptyData();
    d.workflows.set('c', wfRow('c', 'completed', { runs: 3, total: 30, tokens, deliveries }, 'chaos.chain'));
    return d;
  };
  const chainChecks = (tokens: string[], deliveries: Record<string, number>, sends: ChainSend[]) => {
    const d = chainRun(tokens, deliveries);
    const v = new Tally();
    const notes = new Tally();
    checkOutcomes([chain], d, v);
    checkChains([chain], d, new Map([['c', sends]]), v, notes);
    return { violations: v.counts, notes: notes.counts };
  };

  it('accept a chain that counted every acknowledged message once (its delivery counts are not part of the output compared)', () => {
    expect(chainChecks(['c:m0', 'c:m1'], { 'c:m0': 1, 'c:m1': 1 }, [send('c:m0'), send('c:m1')])).toEqual({ violations: {}, notes: {} });
  });

  it('flag an acknowledged message the chain never counted: no accepted message lost', () => {
    const out = chainChecks(['c:m0'], { 'c:m0': 1 }, [send('c:m0'), send('c:m1')]);
    expect(out.violations).toEqual({ wrong_output: 1, accepted_message_lost: 1 });
    // Unacknowledged (the client never learnt it landed): only the output tells.
    expect(chainChecks(['c:m0'], { 'c:m0': 1 }, [send('c:m0'), send('c:m1', false)]).violations).toEqual({ wrong_output: 1 });
  });

  it('flag a message applied twice that the client sent once; note one it sent again', () => {
    expect(chainChecks(['c:m0', 'c:m1'], { 'c:m0': 2, 'c:m1': 1 }, [send('c:m0'), send('c:m1')]).violations).toEqual({
      message_applied_twice: 1,
    });
    expect(chainChecks(['c:m0', 'c:m1'], { 'c:m0': 2, 'c:m1': 1 }, [send('c:m0', true, 2), send('c:m1')])).toEqual({
      violations: {},
      notes: { chain_duplicate_send_deduplicated: 1 },
    });
  });

  it('expect deleted operations of chains and reused ids only', () => {
    const d = emptyData();
    const del = (id: string) => ({ what: 'operation_delete', workflow_id: id, detail: 'seq 0', writer: 'weft:A1' });
    d.forbidden = [del('c'), del('r'), del('s')];
    const notes = new Tally();
    d.forbidden = expectedDeletes([chain, planned('r', 'reuse'), planned('s')], d, notes);
    expect(violationsOf(d)).toEqual({ operation_delete: 1 });
    expect(notes.counts).toEqual({ 'operation_delete_expected:chain': 1, 'operation_delete_expected:reuse': 1 });
  });

  it('accept an id inserted again after its run ended (purge and reuse), not while it runs', () => {
    const d = legitimate(); // completed at version 4
    const again = write({
      tg_op: 'INSERT',
      old_version: null,
      new_version: 1,
      old_status: null,
      claim_epoch: null,
      claim_engine: null,
      at_ms: T + 7000,
    });
    d.wfAudit.push(again);
    expect(violationsOf(d)).toEqual({});
    const early = legitimate();
    early.wfAudit.splice(3, 0, { ...again, at_ms: T + 5800 });
    expect(violationsOf(early)).toMatchObject({ version_not_contiguous: 2 });
    // The quiet spell between the ended run and the new start is no idle workflow.
    const a = new Tally();
    checkIdleGaps(d, 500, a);
    expect(a.counts).toEqual({ workflow_idle_too_long: 1 }); // only legitimate()'s own gap before the takeover
  });

  it('flag a workflow left running: a spawned one, a busy workflow whose cancel never took (no workflow stuck)', () => {
    const d = emptyData();
    const spawned = planned('p.spawned', 'spawned', { startedBy: 'p' });
    const busy = planned('b', 'busycancel', { allowedStatuses: ['completed', 'cancelled'] });
    const busy2 = planned('b2', 'busycancel', { allowedStatuses: ['completed', 'cancelled'] });
    d.workflows.set('p.spawned', wfRow('p.spawned', 'running', null));
    d.workflows.set('b', wfRow('b', 'running', null, 'chaos.busycancel'));
    d.workflows.set('b2', wfRow('b2', 'cancelled', null, 'chaos.busycancel'));
    const v = new Tally();
    checkOutcomes([spawned, busy, busy2], d, v);
    expect(v.counts).toEqual({ not_terminal: 2 });
  });
});
