// bench/renewal: renewal pass time and statement count with 1k/10k/100k held claims, and
// failover time from SIGKILL to the last orphaned workflow resumed (TTL 3s, renew 0.5s), with
// the survivors' shares. Prints JSON.  node --import ./test/support/register-ts.js bench/renewal.ts
import { spawn } from 'node:child_process';
import { Client } from 'pg';
import { WorkflowClaimRegistry } from '../libs/weft/src/ownership/claim-registry.js';
import { resolveOwnership } from '../libs/weft/src/ownership/config.js';
import { openDatabase } from '../libs/weft/src/storage/data-source.js';
import { sourcePath, TS_NODE_ARGS } from '../test/support/node-ts.js';
import { machine, round, withFreshDatabase } from './support.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function renewalPass(url: string, held: number) {
  const db = await openDatabase({ database: { url }, schema: 'weft' });
  try {
    await db.sql.query(`TRUNCATE weft.weft_workflow_claims`);
    await db.sql.query(
      `INSERT INTO weft.weft_workflow_claims (workflow_id, epoch, engine_id, expires_at, claimed_at)
       SELECT 'w-' || g, 1, 'bench', now() + interval '1 minute', now() FROM generate_series(1, $1) g`,
      [held],
    );
    const config = resolveOwnership({ ownership: 'workflow-lease' });
    const registry = new WorkflowClaimRegistry({ sql: db.sql, schema: 'weft', engineId: 'bench', config });
    for (let i = 1; i <= held; i++) registry.held.set(`w-${i}`, '1');
    let statements = 0;
    const original = db.sql.query.bind(db.sql);
    db.sql.query = ((text: string, params?: unknown[]) => {
      statements++;
      return original(text, params);
    }) as typeof db.sql.query;
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      const lost = await registry.renewAll();
      times.push(performance.now() - t0);
      if (lost.length) throw new Error(`lost ${lost.length} claims`);
    }
    return { heldClaims: held, passMsMedianOf3: round(median(times), 1), statementsPerPass: statements / 3 };
  } finally {
    await db.close();
  }
}

function child(script: string, env: Record<string, string>) {
  // stdin stays open: the engine child disposes itself when it closes.
  const p = spawn(process.execPath, [...TS_NODE_ARGS, script], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  const ready = new Promise<void>((resolve, reject) => {
    let buf = '';
    p.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('"started"') || (env.START_COUNT === undefined && buf.includes('"ready"'))) resolve();
    });
    p.on('exit', (code) => reject(new Error(`engine ${env.WEFT_ENGINE_ID} exited ${code}`)));
  });
  ready.catch(() => undefined);
  return { p, ready };
}

async function failover(url: string, workflows: number) {
  const script = sourcePath('test/fixtures/engine-child.ts');
  const env = {
    DATABASE_URL: url,
    WEFT_SCHEMA: 'weft',
    OWNERSHIP: 'workflow-lease',
    CLAIM_TTL_MS: '3000',
    CLAIM_RENEW_MS: '500',
    STEP_MS: '2000',
  };
  const a = child(script, { ...env, WEFT_ENGINE_ID: 'A', START_COUNT: String(workflows), ID_PREFIX: 'fo' });
  await a.ready;
  const survivors = [child(script, { ...env, WEFT_ENGINE_ID: 'B' }), child(script, { ...env, WEFT_ENGINE_ID: 'C' })];
  await Promise.all(survivors.map((s) => s.ready));
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    for (;;) {
      const r = await c.query(`SELECT count(DISTINCT workflow_id)::int AS n FROM ledger WHERE engine = 'A'`);
      if (r.rows[0].n >= workflows) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    a.p.kill('SIGKILL');
    const killedAt = Date.now();
    let resumedAll = 0;
    for (;;) {
      const r = await c.query(`SELECT count(DISTINCT workflow_id)::int AS n FROM ledger WHERE engine <> 'A'`);
      if (r.rows[0].n >= workflows) {
        resumedAll = Date.now() - killedAt;
        break;
      }
      if (Date.now() - killedAt > 120_000) throw new Error('failover did not complete in 120 s');
      await new Promise((res) => setTimeout(res, 20));
    }
    const shares = await c.query(`SELECT engine, count(DISTINCT workflow_id)::int AS n FROM ledger WHERE engine <> 'A' GROUP BY engine`);
    return {
      workflows,
      claimTtlMs: 3000,
      renewIntervalMs: 500,
      sigkillToLastResumedMs: resumedAll,
      survivorShares: Object.fromEntries(shares.rows.map((s) => [s.engine, round(s.n / workflows, 3)])),
    };
  } finally {
    await c.end();
    for (const s of survivors) s.p.kill('SIGKILL');
  }
}

async function main() {
  const passes = [];
  for (const held of [1_000, 10_000, 100_000]) passes.push(await withFreshDatabase((url) => renewalPass(url, held)));
  const failovers = [];
  for (const n of [50, 200]) failovers.push(await withFreshDatabase((url) => failover(url, n)));
  process.stdout.write(
    `${JSON.stringify({ bench: 'renewal', at: new Date().toISOString(), machine: machine(), renewalPasses: passes, failovers }, null, 2)}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
