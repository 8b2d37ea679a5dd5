// The ceiling the throughput figures are divided by: pgbench (ships with PostgreSQL) committing
// a one-row INSERT, prepared, at 1 and 16 clients, on the same server as the engine, in a
// scratch database of its own. `npm run bench` measures it before and after every throughput
// run, so a figure and its ceiling come from the same window of a machine that drifts.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';

export const adminUrl = () =>
  process.env.BENCH_DATABASE_URL ?? process.env.WEFT_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const PGBENCH = process.env.BENCH_PGBENCH ?? '/usr/bin/pgbench';
const SCRIPT = 'INSERT INTO ceiling (client, v) VALUES (:client_id, 1);\n';

/** A scratch database with one table; `measure(clients)` runs pgbench on it; `drop()` ends it. */
export async function openCeiling() {
  const name = `weft_ceiling_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const u = new URL(adminUrl());
  u.pathname = `/${name}`;
  const db = new pg.Client({ connectionString: u.toString() });
  await db.connect();
  await db.query('CREATE TABLE ceiling (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, client int NOT NULL, v int NOT NULL)');
  await db.end();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-ceiling-'));
  const script = path.join(dir, 'insert.sql');
  fs.writeFileSync(script, SCRIPT);
  const seconds = Number(process.env.BENCH_CEILING_SECONDS ?? 3);

  /**
   * One-row INSERT commits per second at `clients` clients (pgbench's tps without connection time).
   * `cpus`: run the client on these CPUs only (taskset's list, bench/placement.ts).
   */
  function measure(clients, cpus) {
    const args = ['-n', '-M', 'prepared', '-c', String(clients), '-j', String(Math.min(clients, os.cpus().length)), '-T', String(seconds)];
    args.push('-f', script, '-h', u.hostname, '-p', u.port || '5432');
    if (u.username) args.push('-U', decodeURIComponent(u.username));
    args.push(name);
    const env = { ...process.env, ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}) };
    const [file, argv] = cpus === undefined ? [PGBENCH, args] : ['taskset', ['-c', cpus, PGBENCH, ...args]];
    const out = execFileSync(file, argv, { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'] });
    const tps = /tps = ([\d.]+)/.exec(out);
    const lat = /latency average = ([\d.]+) ms/.exec(out);
    if (!tps) throw new Error(`pgbench printed no tps:\n${out}`);
    return { clients, tps: Math.round(Number(tps[1])), latencyMs: lat ? Number(lat[1]) : undefined };
  }

  /**
   * The same one-row INSERT committed one after another from node-pg (the driver the engine
   * uses), prepared: p50 and mean in ms. pgbench's C client is the floor of the database; this
   * is the floor of one commit from Node on this machine.
   */
  async function nodeCommit(n = 1000) {
    const c = new pg.Client({ connectionString: u.toString() });
    c.on('error', () => undefined);
    await c.connect();
    try {
      const ms = [];
      for (let i = 0; i < n + 50; i++) {
        const t0 = performance.now();
        await c.query({ name: 'ceiling_insert', text: 'INSERT INTO ceiling (client, v) VALUES ($1, 1)', values: [0] });
        if (i >= 50) ms.push(performance.now() - t0); // the first 50 warm the connection and the plan
      }
      ms.sort((a, b) => a - b);
      const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
      return { commits: n, p50Ms: Math.round(ms[Math.floor(n / 2)] * 1000) / 1000, meanMs: Math.round(mean * 1000) / 1000 };
    } finally {
      await c.end();
    }
  }

  async function drop() {
    fs.rmSync(dir, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }

  return { measure, nodeCommit, drop, seconds };
}
