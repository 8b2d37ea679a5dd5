// Which text of the advance statement a batch is sent as, and its parameters: the lone form for
// one step record or plain terminal commit (workflow-advance-lone.ts), else the general statement
// for the union of the batch's parts, with a lone command's id as a parameter (workflow-advance.ts).
import type { AdvanceCommand } from '../types.js';
import { advanceParams, advanceSql, shapeFromKey, shapeKeyOf } from './workflow-advance.js';
import { isLoneRecord, loneAdvanceParams, loneAdvanceSql } from './workflow-advance-lone.js';

type Form = 'lone' | 'single' | 'batch';

/** The advance statements of one schema, each text built once per shape and form. */
export class AdvanceStatements {
  private readonly texts = new Map<number, string>();

  constructor(private readonly schema: string) {}

  /** The statement for `sorted` (commands in id order) and its parameters. */
  for(sorted: AdvanceCommand[]): { sql: string; params: unknown[] } {
    let shape = 0;
    for (const c of sorted) shape |= shapeKeyOf(c);
    if (isLoneRecord(sorted, shape)) return { sql: this.text(shape, 'lone'), params: loneAdvanceParams(sorted[0], shape) };
    return { sql: this.text(shape, sorted.length === 1 ? 'single' : 'batch'), params: advanceParams(sorted) };
  }

  private text(shape: number, form: Form): string {
    const key = shape * 4 + (form === 'lone' ? 2 : form === 'single' ? 1 : 0);
    let sql = this.texts.get(key);
    if (!sql) {
      const parts = shapeFromKey(shape);
      sql = form === 'lone' ? loneAdvanceSql(this.schema, parts) : advanceSql(this.schema, parts, form === 'single');
      this.texts.set(key, sql);
    }
    return sql;
  }
}
