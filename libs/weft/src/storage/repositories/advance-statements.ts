// Which text of the advance statement a batch is sent as, and its parameters: the lone form for
// one step record or plain terminal commit (workflow-advance-lone.ts), else the general statement
// for the union of the batch's parts, with a lone command's id as a parameter (workflow-advance.ts).
import type { AdvanceCommand } from '../types.js';
import { isLoneRecord, loneAdvanceParams, shapeFromKey, shapeKeyOf } from './advance-parts.js';
import { advanceParams, advanceSql } from './workflow-advance.js';
import { loneAdvanceSql } from './workflow-advance-lone.js';

/** The texts of one shape; a text's cache key is its shape key times their count plus its index here. */
const FORMS = ['batch', 'single', 'lone'] as const;
type Form = (typeof FORMS)[number];

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
    const key = shape * FORMS.length + FORMS.indexOf(form);
    let sql = this.texts.get(key);
    if (!sql) {
      const parts = shapeFromKey(shape);
      sql = form === 'lone' ? loneAdvanceSql(this.schema, parts) : advanceSql(this.schema, parts, form === 'single');
      this.texts.set(key, sql);
    }
    return sql;
  }
}
