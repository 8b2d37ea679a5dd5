// Instrumentation the harness installs in its private database (never in Weft's code): the
// side-effect ledger the workers append to, and audit triggers on Weft's tables that record, for
// every write, WHICH engine wrote it (each worker tags its connections with application_name =
// 'weft:<engine id>') and what the workflow's claim looked like at that instant.
export const LEDGER_SCHEMA = 'chaos';

export function ledgerDdl(): string[] {
  return [
    `CREATE SCHEMA IF NOT EXISTS ${LEDGER_SCHEMA}`,
    `CREATE TABLE IF NOT EXISTS ${LEDGER_SCHEMA}.ledger (
      id bigserial PRIMARY KEY, workflow_id text NOT NULL, seq int NOT NULL, step text NOT NULL, attempt int NOT NULL,
      engine text NOT NULL, pid int NOT NULL, body_started timestamptz NOT NULL, step_started timestamptz NOT NULL,
      at timestamptz NOT NULL DEFAULT clock_timestamp(),
      claim_epoch bigint, claim_engine text, claim_live boolean NOT NULL, op_recorded boolean NOT NULL,
      body_finished timestamptz, finished_aborted boolean, progress_from int)`,
    // What transactional steps ('chaos.txsteps') write in their own transaction: no unique key, so a
    // second commit of one step would show as a second row (checkTxRows).
    `CREATE TABLE IF NOT EXISTS ${LEDGER_SCHEMA}.tx_rows (
      workflow_id text NOT NULL, seq int NOT NULL, lid bigint NOT NULL, engine text NOT NULL)`,
  ];
}

/** In claim_audit, the store-wide lease (ownership 'lease') is this pseudo workflow id. */
export const LEASE_ID = '~lease';

/**
 * Audit tables and triggers; `weft` is Weft's schema (already migrated). Under ownership 'lease'
 * the unit of ownership is the global lease: every write records the lease's epoch and holder
 * instead of a workflow claim, and the lease's epoch/holder changes go to claim_audit as LEASE_ID.
 */
export function auditDdl(weft: string, ownership: 'workflow-lease' | 'lease' = 'workflow-lease'): string[] {
  const s = LEDGER_SCHEMA;
  const app = `current_setting('application_name')`;
  const readFence =
    ownership === 'lease'
      ? `SELECT l.epoch, l.holder INTO e, eng FROM ${weft}.weft_global_lease l WHERE l.id = 1;`
      : `SELECT c.epoch, c.engine_id INTO e, eng FROM ${weft}.weft_workflow_claims c WHERE c.workflow_id = NEW.id;`;
  return [
    `CREATE TABLE ${s}.wf_audit (id bigserial PRIMARY KEY, workflow_id text NOT NULL, tg_op text NOT NULL,
       old_version int, new_version int, old_status text, new_status text, writer text NOT NULL,
       claim_epoch bigint, claim_engine text, txid bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    `CREATE TABLE ${s}.op_audit (id bigserial PRIMARY KEY, workflow_id text NOT NULL, seq int NOT NULL, kind text NOT NULL,
       name text NOT NULL, writer text NOT NULL, txid bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    `CREATE TABLE ${s}.claim_audit (id bigserial PRIMARY KEY, workflow_id text NOT NULL, tg_op text NOT NULL,
       old_epoch bigint, new_epoch bigint, old_engine text, new_engine text, writer text NOT NULL,
       at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    `CREATE INDEX ON ${s}.claim_audit (workflow_id, id)`,
    `CREATE INDEX ON ${s}.claim_audit (at)`,
    `CREATE INDEX ON ${s}.wf_audit (at)`,
    // Failover times skip the claims of workflows that had ended by the fault (metrics.ts).
    `CREATE INDEX ON ${s}.wf_audit (workflow_id, at)`,
    `CREATE TABLE ${s}.forbidden (id bigserial PRIMARY KEY, what text NOT NULL, workflow_id text, detail text,
       writer text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    // AFTER ROW triggers fire at the end of the statement, so the claim read here is the claim as
    // the advance statement left it: a takeover must update the workflow row this statement holds
    // (docs/decisions/0008), so it cannot commit before this write does.
    `CREATE FUNCTION ${s}.audit_wf() RETURNS trigger LANGUAGE plpgsql AS $$
     DECLARE e bigint; eng text;
     BEGIN
       ${readFence}
       IF TG_OP = 'UPDATE' THEN
         INSERT INTO ${s}.wf_audit (workflow_id, tg_op, old_version, new_version, old_status, new_status, writer, claim_epoch, claim_engine, txid)
         VALUES (NEW.id, TG_OP, OLD.version, NEW.version, OLD.status, NEW.status, ${app}, e, eng, txid_current());
       ELSE
         INSERT INTO ${s}.wf_audit (workflow_id, tg_op, new_version, new_status, writer, claim_epoch, claim_engine, txid)
         VALUES (NEW.id, TG_OP, NEW.version, NEW.status, ${app}, e, eng, txid_current());
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER chaos_wf_audit AFTER INSERT ON ${weft}.weft_workflows FOR EACH ROW EXECUTE FUNCTION ${s}.audit_wf()`,
    // A claim handover or release sets the row's fence_epoch alone, in the claim's own statement
    // (docs/decisions/0008): not a write of the workflow, and audited as the claim change.
    `CREATE TRIGGER chaos_wf_audit_upd AFTER UPDATE ON ${weft}.weft_workflows FOR EACH ROW
       WHEN ((to_jsonb(OLD) - 'fence_epoch') IS DISTINCT FROM (to_jsonb(NEW) - 'fence_epoch')) EXECUTE FUNCTION ${s}.audit_wf()`,
    `CREATE FUNCTION ${s}.audit_op() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF TG_OP = 'INSERT' THEN
         INSERT INTO ${s}.op_audit (workflow_id, seq, kind, name, writer, txid) VALUES (NEW.workflow_id, NEW.seq, NEW.kind, NEW.name, ${app}, txid_current());
       ELSE
         INSERT INTO ${s}.forbidden (what, workflow_id, detail, writer) VALUES ('operation_' || lower(TG_OP), OLD.workflow_id, 'seq ' || OLD.seq, ${app});
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER chaos_op_audit AFTER INSERT OR UPDATE OR DELETE ON ${weft}.weft_operations FOR EACH ROW EXECUTE FUNCTION ${s}.audit_op()`,
    `CREATE FUNCTION ${s}.audit_claim() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF TG_OP = 'DELETE' THEN
         INSERT INTO ${s}.forbidden (what, workflow_id, detail, writer) VALUES ('claim_deleted', OLD.workflow_id, 'epoch ' || OLD.epoch, ${app});
       ELSIF TG_OP = 'INSERT' THEN
         INSERT INTO ${s}.claim_audit (workflow_id, tg_op, new_epoch, new_engine, writer) VALUES (NEW.workflow_id, TG_OP, NEW.epoch, NEW.engine_id, ${app});
       ELSE
         INSERT INTO ${s}.claim_audit (workflow_id, tg_op, old_epoch, new_epoch, old_engine, new_engine, writer)
         VALUES (NEW.workflow_id, TG_OP, OLD.epoch, NEW.epoch, OLD.engine_id, NEW.engine_id, ${app});
       END IF;
       RETURN NULL;
     END $$`,
    // Renewals (expiry only) are not audited: only epoch and holder changes are.
    `CREATE TRIGGER chaos_claim_audit_upd AFTER UPDATE ON ${weft}.weft_workflow_claims FOR EACH ROW
       WHEN (OLD.epoch IS DISTINCT FROM NEW.epoch OR OLD.engine_id IS DISTINCT FROM NEW.engine_id) EXECUTE FUNCTION ${s}.audit_claim()`,
    `CREATE TRIGGER chaos_claim_audit_ins AFTER INSERT OR DELETE ON ${weft}.weft_workflow_claims FOR EACH ROW EXECUTE FUNCTION ${s}.audit_claim()`,
    ...progressAuditDdl(weft),
    ...(ownership === 'lease' ? leaseAuditDdl(weft) : []),
  ];
}

/**
 * Every heartbeat the engines saved (weft_step_progress rows are removed when their step ends):
 * the details each write stored, with its writer, so the checks can tell what a retried step had
 * to resume from (checks-cleanup.ts).
 */
function progressAuditDdl(weft: string): string[] {
  const s = LEDGER_SCHEMA;
  return [
    `CREATE TABLE ${s}.progress_audit (id bigserial PRIMARY KEY, workflow_id text NOT NULL, run_number int NOT NULL, seq int NOT NULL,
       attempt int NOT NULL, details text, writer text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    `CREATE FUNCTION ${s}.audit_progress() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       INSERT INTO ${s}.progress_audit (workflow_id, run_number, seq, attempt, details, writer)
       VALUES (NEW.workflow_id, NEW.run_number, NEW.seq, NEW.attempt, NEW.details::text, current_setting('application_name'));
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER chaos_progress_audit_ins AFTER INSERT ON ${weft}.weft_step_progress FOR EACH ROW
       WHEN (NEW.has_details) EXECUTE FUNCTION ${s}.audit_progress()`,
    `CREATE TRIGGER chaos_progress_audit_upd AFTER UPDATE ON ${weft}.weft_step_progress FOR EACH ROW
       WHEN (NEW.has_details AND NEW.details::text IS DISTINCT FROM OLD.details::text) EXECUTE FUNCTION ${s}.audit_progress()`,
  ];
}

function leaseAuditDdl(weft: string): string[] {
  const s = LEDGER_SCHEMA;
  const app = `current_setting('application_name')`;
  return [
    `CREATE FUNCTION ${s}.audit_lease() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF TG_OP = 'DELETE' THEN
         INSERT INTO ${s}.forbidden (what, workflow_id, detail, writer) VALUES ('claim_deleted', '${LEASE_ID}', 'epoch ' || OLD.epoch, ${app});
       ELSIF TG_OP = 'INSERT' THEN
         INSERT INTO ${s}.claim_audit (workflow_id, tg_op, new_epoch, new_engine, writer) VALUES ('${LEASE_ID}', TG_OP, NEW.epoch, NEW.holder, ${app});
       ELSE
         INSERT INTO ${s}.claim_audit (workflow_id, tg_op, old_epoch, new_epoch, old_engine, new_engine, writer)
         VALUES ('${LEASE_ID}', TG_OP, OLD.epoch, NEW.epoch, OLD.holder, NEW.holder, ${app});
       END IF;
       RETURN NULL;
     END $$`,
    `CREATE TRIGGER chaos_lease_audit_upd AFTER UPDATE ON ${weft}.weft_global_lease FOR EACH ROW
       WHEN (OLD.epoch IS DISTINCT FROM NEW.epoch OR OLD.holder IS DISTINCT FROM NEW.holder) EXECUTE FUNCTION ${s}.audit_lease()`,
    `CREATE TRIGGER chaos_lease_audit_ins AFTER INSERT OR DELETE ON ${weft}.weft_global_lease FOR EACH ROW EXECUTE FUNCTION ${s}.audit_lease()`,
    // The first holder took the lease before the triggers existed: its acquisition, as if audited.
    `INSERT INTO ${s}.claim_audit (workflow_id, tg_op, new_epoch, new_engine, writer)
       SELECT '${LEASE_ID}', 'INSERT', epoch, holder, 'weft:' || holder FROM ${weft}.weft_global_lease WHERE holder IS NOT NULL`,
  ];
}
