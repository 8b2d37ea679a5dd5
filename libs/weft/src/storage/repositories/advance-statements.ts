// Which text of the advance statement a batch is sent as, and its parameters: the lone form for
// one step record or plain terminal commit (workflow-advance-lone.ts), else the general statement
// for the union of the batch's parts, with a lone command's id as a parameter (workflow-advance.ts).
import type { ClockOffset } from '../../common/clock.js';
import type { AdvanceCommand } from '../types.js';
import { isLoneRecord, loneAdvanceParams, shapeFromKey, shapeKeyOf } from './advance-shapes.js';
import { advanceParams, advanceSql } from './workflow-advance.js';
import { loneAdvanceSql } from './workflow-advance-lone.js';

/** The texts of one shape; a text's cache key is its shape key times their count plus its index here. */
const FORMS = ['batch', 'single', 'lone', 'lone-raising'] as const;
type Form = (typeof FORMS)[number];

/** The advance statements of one schema, each text built once per shape and form. */
export class AdvanceStatements {
  private readonly texts = new Map<number, string>();

  constructor(
    private readonly schema: string,
    private readonly clockOffset: ClockOffset = () => 0,
  ) {}

  /** The statement for `sorted` (commands in id order) and its parameters. */
  for(commands: AdvanceCommand[]): { sql: string; params: unknown[] } {
    return this.build(commands, false);
  }

  /**
   * A transactional step's advance (`command` holding the record of step `seq`): the lone form
   * that fails when refused (`raises`), when the command fits it with that record as its only
   * operation, so the record needs no check of its own before the COMMIT (docs/decisions/0047);
   * else the statement of `for`, which the caller checks.
   */
  forStep(command: AdvanceCommand, seq: number): { sql: string; params: unknown[]; raises: boolean } {
    const ops = command.operations;
    return this.build([command], ops?.length === 1 && ops[0].seq === seq);
  }

  private build(commands: AdvanceCommand[], raising: boolean): { sql: string; params: unknown[]; raises: boolean } {
    const off = this.clockOffset();
    const sorted = off === 0 ? commands : commands.map((c) => onWorkflowClock(c, off));
    let shape = 0;
    for (const c of sorted) shape |= shapeKeyOf(c);
    if (isLoneRecord(sorted, shape))
      return { sql: this.text(shape, raising ? 'lone-raising' : 'lone'), params: loneAdvanceParams(sorted[0], shape), raises: raising };
    return { sql: this.text(shape, sorted.length === 1 ? 'single' : 'batch'), params: advanceParams(sorted), raises: false };
  }

  private text(shape: number, form: Form): string {
    const key = shape * FORMS.length + FORMS.indexOf(form);
    let sql = this.texts.get(key);
    if (!sql) {
      const parts = shapeFromKey(shape);
      sql =
        form === 'lone' || form === 'lone-raising'
          ? loneAdvanceSql(this.schema, parts, form === 'lone-raising')
          : advanceSql(this.schema, parts, form === 'single');
      this.texts.set(key, sql);
    }
    return sql;
  }
}

/**
 * A timer's delay counts from the database clock; the workflow clock's offset (common/clock.ts)
 * puts its fire_at on workflow time. Offset 0 (production) sends the commands as they are.
 */
function onWorkflowClock(c: AdvanceCommand, off: number): AdvanceCommand {
  if (!c.timers?.length) return c;
  return { ...c, timers: c.timers.map((t) => ({ ...t, delayMs: t.delayMs + off })) };
}
