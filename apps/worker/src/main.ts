import 'reflect-metadata';
import { WeftEngine } from '@weft/nest';
import { serveCommands } from './commands.js';
import { Ledger } from './ledger.js';
import { unheardEmitter, watchUnheardErrors } from './unheard-errors.js';
import { CHAOS_WORKFLOWS, useEngine, useLedger } from './workflows.js';

/**
 * Headless engine process for multi-process tests and the chaos harness (test/chaos). Configured
 * by environment:
 *   DATABASE_URL            PostgreSQL URL (absent: the embedded server)
 *   WEFT_SCHEMA             Weft's schema (default 'weft'); LEDGER_SCHEMA the ledger's (default 'chaos')
 *   WEFT_ENGINE_ID          engine id (default: random); it also becomes the connections' application_name
 *   OWNERSHIP               'workflow-lease' (default), 'lease' or 'none'
 *   CLAIM_TTL_MS, CLAIM_RENEW_MS, TIMER_POLL_MS, POOL_SIZE, SHUTDOWN_GRACE_MS
 *   LEASE_TTL_MS, LEASE_RENEW_MS, LEASE_WAIT_MS   ownership 'lease' (a standby waits LEASE_WAIT_MS for the lease)
 *   LEASE_LOST_EXIT_MS      'lease': after losing the lease, stay up (halted) this long, then dispose and exit 3
 *   SKIP_TYPES              comma-separated workflow types this engine does not register (a mixed deploy)
 *   STARTUP_DEADLINE_MS     how long start-up retries while the database is unreachable (default 60 s)
 *   WORKER_COMMANDS=stdin   serve client commands on stdin (commands.ts); stdin closing then stops the process
 * Prints JSON lines on stdout: {"event":"ready",...} once bootstrapped, and the command replies.
 * Under 'lease' a standby prints {"event":"standby"} first and serves signal/update/query while it
 * waits for the lease; {"event":"lease-lost"} when it is deposed. Warnings and errors go to stderr.
 * SIGTERM or SIGINT disposes the engine (graceful: the shutdown grace period), writes the pending
 * ledger marks, prints {"event":"disposed",...} and exits 0.
 */
const env = process.env;
const num = (v: string | undefined, d: number) => (v === undefined || v === '' ? d : Number(v));
const emit = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(e)}\n`);
const say = (level: string) => (m: string) => process.stderr.write(`${level}: ${m}\n`);
const logger = { log: () => undefined, warn: say('warn'), error: say('error') };

/** Tags every connection with the engine id, so the database can tell which engine wrote what. */
function withApplicationName(url: string, name: string): string {
  const u = new URL(url);
  if (!u.searchParams.has('application_name')) u.searchParams.set('application_name', name.slice(0, 60));
  return u.toString();
}

const schema = env.WEFT_SCHEMA ?? 'weft';
const engineId = env.WEFT_ENGINE_ID;
const appName = `weft:${engineId ?? process.pid}`;
const url = env.DATABASE_URL ? withApplicationName(env.DATABASE_URL, appName) : undefined;
const ownership = (env.OWNERSHIP as 'none' | 'lease' | 'workflow-lease' | undefined) ?? 'workflow-lease';
const skipTypes = new Set((env.SKIP_TYPES ?? '').split(',').filter(Boolean));
/** Exit code of an engine that lost the global lease (ownership 'lease') and stopped itself. */
const LEASE_LOST_EXIT = 3;
let engine: WeftEngine | undefined;
let ledger: Ledger | undefined;
let stopping: Promise<void> | undefined;
let ready = false;

function onWarning(w: Error): void {
  if (w.name !== 'WeftEngineLeaseLostWarning' || stopping) return;
  emit({ event: 'lease-lost', engineId, at: Date.now() });
  // Like a deployment whose health check notices the halted engine a while later.
  setTimeout(() => void stop(LEASE_LOST_EXIT), num(env.LEASE_LOST_EXIT_MS, 2000));
}

async function createEngine(): Promise<WeftEngine> {
  const e = await WeftEngine.create({
    database: url ? { url, poolSize: num(env.POOL_SIZE, 10) } : undefined,
    schema,
    engineId,
    ownership,
    workflowClaimTtl: num(env.CLAIM_TTL_MS, 15_000),
    workflowClaimRenewInterval: num(env.CLAIM_RENEW_MS, 3_000),
    leaseTtl: num(env.LEASE_TTL_MS, 15_000),
    leaseRenewInterval: num(env.LEASE_RENEW_MS, 3_000),
    ...(env.LEASE_WAIT_MS ? { leaseWaitTimeout: num(env.LEASE_WAIT_MS, 0) } : {}),
    timerPollInterval: num(env.TIMER_POLL_MS, 1000),
    shutdownGracePeriod: num(env.SHUTDOWN_GRACE_MS, 5000),
    heartbeatFlushInterval: num(env.HEARTBEAT_FLUSH_MS, 1000),
    logger,
    onWarning,
  });
  for (const def of CHAOS_WORKFLOWS) if (!skipTypes.has(def.name)) e.register(def);
  useEngine(e); // before bootstrap: recovery may run a step that starts a workflow
  if (ownership === 'lease') {
    // A standby: messages and queries go through it while it waits for the lease in bootstrap().
    engine = e;
    emit({ event: 'standby', engineId: e.engineId, pid: process.pid });
  }
  try {
    await e.bootstrap();
  } catch (err) {
    engine = undefined;
    await e.dispose().catch(() => undefined);
    throw err;
  }
  return e;
}

/** Start-up survives a database that is restarting: retry with backoff until the deadline. */
async function startWithRetry(): Promise<{ engine: WeftEngine; attempts: number }> {
  const deadline = Date.now() + num(env.STARTUP_DEADLINE_MS, 60_000);
  for (let attempt = 1, wait = 250; ; attempt++, wait = Math.min(wait * 2, 2000)) {
    try {
      if (url) {
        ledger ??= new Ledger(url, engineId ?? String(process.pid), schema, env.LEDGER_SCHEMA ?? 'chaos', 4, ownership);
        await ledger.ensure();
        useLedger(ledger);
      }
      return { engine: await createEngine(), attempts: attempt };
    } catch (err) {
      if (Date.now() + wait > deadline) throw err;
      logger.warn(`start-up attempt ${attempt} failed (${(err as Error).message}); retrying in ${wait} ms`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

function stop(code: number): Promise<void> {
  stopping ??= (async () => {
    const t0 = Date.now();
    // A standby still waiting for the lease in bootstrap() holds nothing: do not wait for it.
    const disposing = engine?.dispose().catch((err: Error) => ({ error: err.message }));
    const report = ready
      ? await disposing
      : await Promise.race([disposing, new Promise((r) => setTimeout(() => r({ standby: true }), 3000))]);
    const disposedAt = Date.now();
    const marksLeft = (await ledger?.flush(5000)) ?? 0;
    await ledger?.close();
    emit({ event: 'disposed', report: report ?? null, disposeMs: disposedAt - t0, stoppingAt: t0, disposedAt, marksLeft, code });
    process.exit(code);
  })();
  return stopping;
}

const oneLine = (err: unknown) => ((err as Error)?.stack ?? String(err)).replace(/\n\s*/g, ' | ');

// Node's default for an unhandled rejection is to terminate the process. The engine should never
// produce one; this process reports it loudly (stderr and an event) and keeps running, so a run
// shows every occurrence instead of one crash.
process.on('unhandledRejection', (reason) => {
  say('error')(`unhandledRejection: ${oneLine(reason)}`);
  emit({ event: 'unhandled-rejection', message: (reason as Error)?.message ?? String(reason), stack: oneLine(reason) });
});
watchUnheardErrors();
process.on('uncaughtException', (err) => {
  const emitter = unheardEmitter(err);
  say('error')(`uncaughtException: ${oneLine(err)}${emitter ? ` | ${emitter}` : ''}`);
  emit({ event: 'uncaught-exception', message: err?.message ?? String(err), stack: oneLine(err), ...(emitter ? { emitter } : {}) });
  process.exit(70);
});

async function main(): Promise<void> {
  if (env.WORKER_COMMANDS === 'stdin') {
    serveCommands(
      () => engine,
      emit,
      () => void stop(0),
    );
  }
  process.once('SIGTERM', () => void stop(0));
  process.once('SIGINT', () => void stop(0));
  const started = await startWithRetry();
  engine = started.engine;
  ready = true;
  emit({ event: 'ready', ready: true, engineId: engine.engineId, pid: process.pid, startAttempts: started.attempts });
}

main().catch((err: unknown) => {
  process.stderr.write(`fatal: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
