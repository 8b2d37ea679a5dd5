// `weft replay-check <file|dir> --workflows <module>`: replays exported histories against the
// code as it is now (engine/replayer.ts), with no database: the CI step for versioning
// (docs/testing.md#replay-check-in-ci).
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { WorkflowDefinition } from '../common/types.js';
import type { WorkflowClass } from '../engine/registry.js';
import { type RecordedWorkflow, type ReplayReport, WorkflowReplayer } from '../engine/replayer.js';
import { CliUsageError } from './errors.js';
import { intOption, str, type CliIo, type Values } from './options.js';
import { jsonText, safe } from './table.js';

type WorkflowEntry = WorkflowDefinition | [string, WorkflowClass];

/** Files read at most from a directory: an export of a whole database is split into files. */
const MAX_FILES = 10_000;

const isDefinition = (v: unknown): v is WorkflowDefinition =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as WorkflowDefinition).name === 'string' &&
  typeof (v as WorkflowDefinition).factory === 'function';
const isPair = (v: unknown): v is [string, WorkflowClass] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'function';

/** A function to call for the types: not a workflow class (which has run()). */
const isFactory = (v: unknown): v is () => unknown =>
  typeof v === 'function' && typeof (v as { prototype?: { run?: unknown } }).prototype?.run !== 'function';

/** Definitions and pairs found in `v` (an export, an array of them, or { workflows }). */
function entriesOf(v: unknown): WorkflowEntry[] {
  if (isDefinition(v) || isPair(v)) return [v];
  if (Array.isArray(v)) return v.flatMap(entriesOf);
  if (typeof v === 'object' && v !== null && 'workflows' in v) return entriesOf((v as { workflows: unknown }).workflows);
  return [];
}

/** Imports the module and gathers its workflow types; a function export is called (it may build a Nest context). */
async function loadWorkflows(spec: string): Promise<{ entries: WorkflowEntry[]; close?: () => Promise<void> }> {
  const target = spec.startsWith('.') || path.isAbsolute(spec) ? pathToFileURL(path.resolve(spec)).href : spec;
  const mod = (await import(target)) as Record<string, unknown>;
  const fn = [mod.default, mod.workflows].find(isFactory);
  const got = fn ? await fn() : Object.values(mod);
  const entries = entriesOf(got);
  const close = (got as { close?: () => Promise<void> } | null)?.close;
  if (entries.length === 0) {
    throw new CliUsageError(
      `--workflows ${safe(spec)} exports no workflow types: export definitions or [name, Class] pairs, or a function returning them`,
    );
  }
  return { entries, close: typeof close === 'function' ? () => close.call(got) : undefined };
}

/** The recorded runs in a file: one describe() object, an array, or { workflows: [...] }. */
function recordsOf(json: unknown, file: string): RecordedWorkflow[] {
  const list = Array.isArray(json) ? json : ((json as { workflows?: unknown })?.workflows ?? [json]);
  if (!Array.isArray(list)) throw new CliUsageError(`${safe(file)}: "workflows" must be an array`);
  return list.map((r, i) => {
    const rec = r as Partial<RecordedWorkflow>;
    if (typeof rec?.workflowId !== 'string' || typeof rec.type !== 'string' || !Array.isArray(rec.history)) {
      throw new CliUsageError(`${safe(file)}: entry ${i} is not a describe() export (workflowId, type, input, history)`);
    }
    return rec as RecordedWorkflow;
  });
}

async function readRecords(where: string): Promise<RecordedWorkflow[]> {
  const stat = await fs.stat(where).catch(() => null);
  if (!stat) throw new CliUsageError(`${safe(where)} does not exist`);
  const files = stat.isDirectory()
    ? (await fs.readdir(where))
        .filter((f) => f.endsWith('.json'))
        .sort()
        .map((f) => path.join(where, f))
    : [where];
  if (files.length > MAX_FILES) throw new CliUsageError(`${safe(where)} holds ${files.length} JSON files; at most ${MAX_FILES}`);
  const out: RecordedWorkflow[] = [];
  for (const file of files) {
    let json: unknown;
    try {
      json = JSON.parse(await fs.readFile(file, 'utf8'));
    } catch (err) {
      throw new CliUsageError(`${safe(file)} is not JSON: ${(err as Error).message}`);
    }
    out.push(...recordsOf(json, file));
  }
  return out;
}

const reportJson = (r: ReplayReport) =>
  r.ok
    ? { workflowId: r.workflowId, type: r.type, ok: true }
    : { workflowId: r.workflowId, type: r.type, ok: false, error: { name: r.error.name, message: r.error.message } };

export async function runReplayCheck(args: string[], v: Values, io: CliIo, json: boolean): Promise<number> {
  const spec = str(v, 'workflows');
  if (!spec) throw new CliUsageError('"weft replay-check" needs --workflows <module>');
  const timeoutMs = intOption(v, 'timeout', 1, 600_000, 10_000);
  const records = await readRecords(args[0]);
  const { entries, close } = await loadWorkflows(spec);
  try {
    const replayer = new WorkflowReplayer(entries);
    const reports: ReplayReport[] = [];
    for (const r of records) {
      const report = await replayer
        .replay(r, timeoutMs)
        .catch((error: Error) => ({ workflowId: r.workflowId, type: r.type, ok: false as const, error }));
      reports.push(report);
      if (!report.ok) break; // the first divergence is the answer
    }
    const failed = reports.find((r) => !r.ok);
    if (json)
      io.stdout.write(
        `${jsonText({ checked: reports.length, total: records.length, ok: !failed, reports: reports.map(reportJson) }, 2)}\n`,
      );
    else {
      for (const r of reports)
        io.stdout.write(`${r.ok ? 'ok  ' : 'FAIL'}  ${safe(r.workflowId)} (${safe(r.type)})${r.ok ? '' : `: ${safe(r.error.message)}`}\n`);
      io.stdout.write(
        failed
          ? `replay-check: divergence in ${safe(failed.workflowId)}\n`
          : `replay-check: ${reports.length} run(s) replay on the current code\n`,
      );
    }
    return failed ? 1 : 0;
  } finally {
    await close?.();
  }
}
