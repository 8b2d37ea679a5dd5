// A release whose statement fails (the database restarting) must not leave the claim row naming
// this engine until it expires: found by the soak (seed 1414), where a PostgreSQL restart right
// after a delayed start's acquire left claims of finished workflows held.
import { createTestDatabase, TestDatabase } from '../../../../test/support/database.js';
import { openDatabase, OpenedDatabase } from '../storage/data-source.js';
import type { SqlAccess } from '../storage/repositories/weft-repository.js';
import { WorkflowClaimRegistry } from './claim-registry.js';
import { resolveOwnership } from './config.js';

/** The pool, except that the first release statement fails as a restarting server's would. */
function failingFirstRelease(db: OpenedDatabase): SqlAccess {
  let failReleases = 1;
  return {
    manager: db.sql.manager,
    query: (text, params) => {
      if (/SET engine_id = NULL/.test(text) && failReleases-- > 0) return Promise.reject(new Error('Connection terminated'));
      return db.sql.query(text, params);
    },
  };
}

const config = resolveOwnership({ ownership: 'workflow-lease', workflowClaimTtl: 60_000, workflowClaimRenewInterval: 1000 });

describe('claim release while the database is away', () => {
  let tdb: TestDatabase;
  let db: OpenedDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    db = await openDatabase({ database: { url: tdb.url, poolSize: 2 }, schema: 'weft' });
  });
  afterAll(async () => {
    await db?.close();
    await tdb?.drop();
  });

  it('a failed release is retried on the next maintenance pass, and the row is free again', async () => {
    const registry = new WorkflowClaimRegistry({ sql: failingFirstRelease(db), schema: 'weft', engineId: 'E1', config });
    const holder = async () =>
      (await tdb.query<{ engine_id: string | null }>(`SELECT engine_id FROM weft.weft_workflow_claims WHERE workflow_id = 'wf-r'`))[0]
        .engine_id;

    await expect(registry.acquire('wf-r')).resolves.toMatchObject({ ok: true });
    await expect(registry.release('wf-r')).rejects.toThrow('Connection terminated');
    expect(await holder()).toBe('E1');
    expect(registry.held.has('wf-r')).toBe(false);
    await expect(registry.retryReleases()).resolves.toBe(true);
    expect(await holder()).toBeNull();
  });

  it('dispose releases what an earlier release left behind', async () => {
    const registry = new WorkflowClaimRegistry({ sql: failingFirstRelease(db), schema: 'weft', engineId: 'E2', config });
    await registry.acquire('wf-d');
    await registry.release('wf-d').catch(() => undefined);
    await expect(registry.releaseAll()).resolves.toEqual({ released: 1, failed: 0 });
    const rows = await tdb.query<{ engine_id: string | null }>(
      `SELECT engine_id FROM weft.weft_workflow_claims WHERE workflow_id = 'wf-d'`,
    );
    expect(rows[0].engine_id).toBeNull();
  });

  // Seen as a WeftWorkflowClaimLostWarning on a lone engine running workflows one at a time: the
  // terminal commit released the claim, and the renewal pass that ran meanwhile got its answer
  // first, so the claim the engine had just let go of read as taken from it.
  it('a claim released at the held epoch before its commit outcome arrives is let go, not lost', async () => {
    const registry = new WorkflowClaimRegistry({ sql: db.sql, schema: 'weft', engineId: 'E3', config });
    await registry.acquire('wf-released');
    await registry.acquire('wf-taken');
    // The terminal commit's release, as the advance writes it; the registry has not heard of it yet.
    await tdb.query(`UPDATE weft.weft_workflow_claims SET engine_id = NULL, expires_at = NULL, claimed_at = NULL
                     WHERE workflow_id = 'wf-released'`);
    // Control: another engine took this one over (a takeover moves the epoch).
    await tdb.query(`UPDATE weft.weft_workflow_claims SET engine_id = 'E9', epoch = epoch + 1 WHERE workflow_id = 'wf-taken'`);

    await expect(registry.renewAll()).resolves.toEqual(['wf-taken']);
    expect([...registry.held.keys()]).toEqual([]);
    expect(registry.renewalFailures).toBe(1);
  });
});
