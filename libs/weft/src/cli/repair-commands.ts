// weft retry and weft fork (docs/cli.md, "Repair"), one workflow or in bulk by filter. The replay
// check needs the app's workflow code: --workflows names a module exporting it. The repaired run
// is left `running` for the app's engines, as `weft resume` leaves a resumed one.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { WorkflowAlreadyStartedError, WorkflowNotRunningError } from '../common/errors.js';
import type { WorkflowDefinition } from '../common/types.js';
import type { WorkflowClass } from '../engine/registry.js';
import { validateName, validateWorkflowId } from '../engine/validation.js';
import { asOfOption, runBulk } from './bulk.js';
import { CliUsageError } from './errors.js';
import { filterOptions, hasFilter, type Prepared, str, type Values } from './options.js';
import type { Session } from './session.js';
import { safe } from './table.js';
import { describeFilter } from './write-commands.js';

type Workflows = Array<WorkflowDefinition | [string, WorkflowClass]>;

/**
 * The module's workflow types: its `workflows` export or its default, an array of definitions or
 * `[name, Class]` pairs (what WorkflowReplayer takes), or a function (maybe async) returning one,
 * e.g. one that builds the Nest app context and returns `app.get(WeftEngine).definitions()`.
 */
async function loadWorkflows(modulePath: string): Promise<Workflows> {
  const mod = (await import(pathToFileURL(path.resolve(modulePath)).href)) as Record<string, unknown>;
  let found = mod.workflows ?? mod.default;
  if (typeof found === 'function') found = await (found as () => unknown)();
  if (!Array.isArray(found))
    throw new CliUsageError(
      `--workflows ${safe(modulePath)} must export "workflows" (or a default): an array of workflow definitions or [name, Class] pairs, or a function returning one`,
    );
  return found as Workflows;
}

function workflowsOption(v: Values, command: string): string {
  const m = str(v, 'workflows');
  if (m === undefined)
    throw new CliUsageError(`"weft ${command}" needs --workflows <module>: the replay check runs the app's workflow code`);
  return m;
}

async function repairer(session: Session, command: string, modulePath: string) {
  const workflows = await loadWorkflows(modulePath);
  return (await session.writer(command)).repairsWith(workflows);
}

/** A bulk fork's ids are its sources' with the step: the same on a re-run, so no source is forked twice. */
export function forkIdOf(sourceId: string, fromStep: number | string): string {
  const id = `${sourceId}~fork-${fromStep}`;
  if (id.length <= 255) return id;
  return `${sourceId.slice(0, 200)}~fork-${createHash('sha256').update(id).digest('hex').slice(0, 32)}`;
}

function fromStepOption(v: Values): number | string {
  const raw = str(v, 'from-step');
  if (raw === undefined) throw new CliUsageError('"weft fork" needs --from-step <seq|step name>');
  return /^\d+$/.test(raw) ? Number(raw) : validateName('--from-step', raw);
}

export function retry(args: string[], v: Values): Prepared {
  const modulePath = workflowsOption(v, 'retry');
  if (args.length && hasFilter(v))
    throw new CliUsageError('Give either a workflow id or --type/--status/--id-prefix/--where filters, not both');
  if (!args.length && !hasFilter(v))
    throw new CliUsageError('"weft retry" needs a workflow id, or --type/--status/--id-prefix/--where for a bulk retry');
  if (args.length) {
    const id = validateWorkflowId(args[0]);
    return async (session) => {
      const r = await (await repairer(session, 'retry', modulePath)).retry(id);
      return { json: r, text: `Retried ${safe(id)} from seq ${r.fromSeq} as run ${r.runNumber}.\n` };
    };
  }
  const filter = filterOptions(v);
  if (filter.statuses && filter.statuses.some((s) => s !== 'failed'))
    throw new CliUsageError('--status: only failed workflows can be retried');
  const f = { ...filter, statuses: ['failed' as const] };
  const asOf = asOfOption(v);
  return async (session, io) => {
    const repair = await repairer(session, 'retry', modulePath);
    const act = async (id: string) => {
      try {
        await repair.retry(id);
        return 'done' as const;
      } catch (err) {
        if (err instanceof WorkflowNotRunningError) return 'skipped' as const; // retried or ended otherwise meanwhile
        throw err;
      }
    };
    const spec = { verb: 'retry', past: 'retried', filter: f, described: describeFilter(f, v), scope: 'unchanged' as const, act };
    return runBulk(session, io, { ...spec, skippedAs: 'were no longer failed' }, v.yes === true, asOf);
  };
}

export function fork(args: string[], v: Values): Prepared {
  const modulePath = workflowsOption(v, 'fork');
  const fromStep = fromStepOption(v);
  if (args.length && hasFilter(v))
    throw new CliUsageError('Give either a workflow id or --type/--status/--id-prefix/--where filters, not both');
  if (!args.length && !hasFilter(v))
    throw new CliUsageError('"weft fork" needs a workflow id, or --type/--status/--id-prefix/--where for a bulk fork');
  if (args.length) {
    const id = validateWorkflowId(args[0]);
    const workflowId = str(v, 'workflow-id');
    if (workflowId !== undefined) validateWorkflowId(workflowId);
    return async (session) => {
      const r = await (await repairer(session, 'fork', modulePath)).fork(id, { fromStep, ...(workflowId ? { workflowId } : {}) });
      return { json: { ...r, forkedFrom: id }, text: `Forked ${safe(id)} from seq ${r.fromSeq} as ${safe(r.workflowId)}.\n` };
    };
  }
  if (str(v, 'workflow-id') !== undefined) throw new CliUsageError('--workflow-id names one fork: a bulk fork names each <id>~fork-<step>');
  const f = filterOptions(v);
  const asOf = asOfOption(v);
  return async (session, io) => {
    const repair = await repairer(session, 'fork', modulePath);
    const act = async (id: string) => {
      try {
        await repair.fork(id, { fromStep, workflowId: forkIdOf(id, fromStep) });
        return 'done' as const;
      } catch (err) {
        if (err instanceof WorkflowAlreadyStartedError) return 'skipped' as const; // forked by an earlier run
        throw err;
      }
    };
    const where = ['w.forked_from IS NULL']; // a fork is not forked again by the same bulk
    const spec = { verb: 'fork', past: 'forked', filter: f, described: describeFilter(f, v), scope: 'created' as const, where, act };
    return runBulk(session, io, { ...spec, skippedAs: 'had been forked already' }, v.yes === true, asOf);
  };
}
