/**
 * The current generation of cached plans (plan-freshness.ts): a connection that ran statements
 * under an older one sends `DISCARD PLANS` before its next statement (SqlClient,
 * DedicatedConnection). Its own module: SqlClient holds one, and PlanFreshness reads through it.
 */
export class PlanGeneration {
  value = 0;
  /** DISCARD PLANS sent, for tests and benchmarks. */
  discards = 0;
}
