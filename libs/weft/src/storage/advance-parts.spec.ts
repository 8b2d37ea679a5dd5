// Each part of the advance statement is described once (advance-parts.ts); both forms derive from
// that description. For every part, a command that uses it must get the part's bit, a record
// whose keys are all columns of its text, and statements that PostgreSQL accepts: the general
// statement as a lone command and as a batch, and the lone form when the part has one.
import { useTestStore } from '../../../../test/support/store.js';
import { ADVANCE_PARTS } from './repositories/advance-parts.js';
import {
  isLoneRecord,
  loneAdvanceParams,
  loneParamsOf,
  PART_NAMES,
  shapeBit,
  shapeKeyOf,
  shapeOf,
  toCommandJson,
  type AdvancePartName,
} from './repositories/advance-shapes.js';
import { AdvanceStatements } from './repositories/advance-statements.js';
import { advanceOutcomes, advanceParams, advanceSql, type AdvanceRow } from './repositories/workflow-advance.js';
import { loneAdvanceSql } from './repositories/workflow-advance-lone.js';
import type { AdvanceCommand } from './types.js';

const fence = { engineId: 'engine-a', epoch: '4' };
const op = { seq: 0, kind: 'step' as const, name: 'a', status: 'completed' as const, result: 1 };

/** A command that uses each part (with what the part needs beside it); a new part needs one here. */
const uses: Record<AdvancePartName, Omit<AdvanceCommand, 'workflowId' | 'expectedVersion'>> = {
  attrs: { attributes: { tier: 2, gone: null } },
  ops: { operations: [op] },
  delTimers: { clearTimers: true, deleteTimers: [{ kind: 'sleep', seq: 0 }] },
  timers: { timers: [{ kind: 'sleep', seq: 1, delayMs: 1000 }] },
  msgs: { messages: [{ workflowId: 'other', kind: 'signal', name: 'go', payload: 1 }] },
  consume: { consume: [{ id: '1', seq: 1 }] },
  fence: { fence },
  lease: { leaseFence: fence },
  release: { fence, release: true, status: 'suspended' },
  rotate: { rotate: true, status: 'cancelled' },
  cont: { continueAsNew: { input: { n: 2 }, workflowVersion: null } },
  trace: { traceContext: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
  byStatus: { ifStatus: 'running', status: 'cancelled' },
  events: { events: [{ key: 'ready', value: { n: 1 }, seq: 3 }] },
  sends: { sends: [{ workflowId: 'other', name: 'go', payload: { n: 1 } }] },
  updateResults: { updateResults: [{ id: '7', status: 'done', result: { value: 3 } }] },
  handoff: {
    status: 'completed',
    handoff: { queue: 'q', pick: true, notifier: 'engine-a', types: ['t'], engineId: 'engine-a', ttlMs: 30_000, graceMs: 5_000 },
  },
  streams: {
    streams: [
      { key: 'tokens', value: 'a' },
      { key: 'tokens', value: 'b' },
      { key: 'tokens', close: true },
    ],
  },
};

/** The columns a statement's `cmd` declares. */
const declared = (sql: string): string[] => {
  const list = /AS c\(([\s\S]*?)\)\)/.exec(sql)![1];
  return list.split(',').map((c) => c.trim().split(' ')[0]);
};

describe('advance parts: each description produces both forms (real PostgreSQL)', () => {
  const env = useTestStore({ poolSize: 2 });
  const run = (sql: string, params: unknown[]) => env.db.sql.query<AdvanceRow>(sql, params);

  it('every part has a command that uses it', () => {
    expect(Object.keys(uses).sort()).toEqual([...PART_NAMES].sort());
  });

  it.each(PART_NAMES)('%s', async (part) => {
    const cmd = (workflowId: string): AdvanceCommand => ({ workflowId, expectedVersion: 1, ...uses[part] });
    const c = cmd('p-1');
    const key = shapeKeyOf(c);
    expect(key & shapeBit(part)).not.toBe(0);
    // Every key of the record is a column of the text: a part that writes a key it does not declare reads NULL.
    const sql = advanceSql('weft', shapeOf(c), true);
    expect(declared(sql)).toEqual(expect.arrayContaining(Object.keys(toCommandJson(c))));
    // The general statement, for one command and for a batch: accepted; on no workflow, refused.
    const rows = await run(sql, advanceParams([c]));
    expect(advanceOutcomes([c], rows).map((o) => o.ok)).toEqual([false]);
    const batch = [c, cmd('p-2')];
    const batchRows = await run(advanceSql('weft', shapeOf(c)), advanceParams(batch));
    expect(advanceOutcomes(batch, batchRows).map((o) => o.ok)).toEqual([false, false]);
    // The lone form exists exactly for the parts that describe one, and takes their parameters.
    const lone = 'lone' in ADVANCE_PARTS[part];
    expect(isLoneRecord([c], key)).toBe(lone);
    if (lone) {
      const params = loneAdvanceParams(c, key);
      expect(params).toHaveLength(loneParamsOf(shapeOf(c)).length);
      const loneRows = await run(loneAdvanceSql('weft', shapeOf(c)), params);
      expect(advanceOutcomes([c], loneRows).map((o) => o.ok)).toEqual([false]);
    }
    // What the engine sends: the statement cache picks the same forms.
    const statements = new AdvanceStatements('weft');
    expect(statements.for([c]).sql).toBe(lone ? loneAdvanceSql('weft', shapeOf(c)) : sql);
    expect(statements.for(batch).sql).toBe(advanceSql('weft', shapeOf(c)));
  });
});
