import { WorkflowStatus } from '../common/types.js';
import { advanceCommand } from './advance-command.js';

// Commands of one shape keep the statement builders' reads monomorphic (docs/decisions/0070): a
// step's commit, an end and a fenced copy of either must list the same keys in the same order.
describe('advanceCommand (pure logic)', () => {
  const op = { seq: 0, kind: 'step', name: 'a', status: 'completed', result: 1 } as never;

  it('builds a step commit, an end and a fenced command with the same keys in the same order', () => {
    const step = advanceCommand('w', 1, { operations: [op] });
    const end = advanceCommand('w', 2, { status: WorkflowStatus.Completed, output: { value: 1 }, completed: true, clearTimers: true });
    const fenced = advanceCommand(end.workflowId, end.expectedVersion, end, { fence: { engineId: 'e', epoch: '3' }, release: false });
    expect(Object.keys(end)).toEqual(Object.keys(step));
    expect(Object.keys(fenced)).toEqual(Object.keys(step));
  });

  it('keeps every field it is given and takes the fence from the policy', () => {
    const fields = { status: WorkflowStatus.Suspended, error: { value: 'x' }, fence: { engineId: 'old', epoch: '1' }, handoff: undefined };
    const c = advanceCommand('w', 7, fields, { fence: { engineId: 'e', epoch: '2' }, release: true });
    expect(c).toMatchObject({ workflowId: 'w', expectedVersion: 7, status: 'suspended', error: { value: 'x' }, release: true });
    expect(c.fence).toEqual({ engineId: 'e', epoch: '2' });
    // Absent fields are present as undefined, and written nowhere (JSON leaves them out).
    expect(JSON.parse(JSON.stringify(c))).toEqual({
      workflowId: 'w',
      expectedVersion: 7,
      status: 'suspended',
      error: { value: 'x' },
      fence: { engineId: 'e', epoch: '2' },
      release: true,
    });
  });
});
