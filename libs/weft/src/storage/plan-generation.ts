/**
 * The current generation of cached plans (plan-freshness.ts): a connection that ran statements
 * under an older one sends `DISCARD PLANS` before its next statement (SqlClient,
 * DedicatedConnection). Its own module: SqlClient holds one, and PlanFreshness reads through it.
 */
export class PlanGeneration {
  value = 0;
  /** DISCARD PLANS sent, for tests and benchmarks. */
  discards = 0;

  /**
   * Brings a connection whose plans are of generation `seen` up to the current one; returns the
   * generation it is in now. A connection that has run nothing yet (`seen` current) sends nothing.
   */
  async catchUp(client: { query(text: string): Promise<unknown> }, seen: number | undefined): Promise<number> {
    const now = this.value;
    if (seen === now) return now;
    await client.query('DISCARD PLANS');
    this.discards++;
    return now;
  }
}
