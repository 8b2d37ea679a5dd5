// Every advance command of the hot path is built here, with all of its fields in one order (absent
// ones undefined): the statement builders read a dozen fields of each command, and commands of one
// shape keep those reads monomorphic. Built by spreads, each kind of commit (a step's, an end, the
// same with a fence added) had a shape of its own, and the builders' reads went megamorphic
// (docs/decisions/0070).
import type { AdvanceCommand } from './types.js';

/** What a command writes, without the row it writes it to. */
export type AdvanceFields = Omit<AdvanceCommand, 'workflowId' | 'expectedVersion'>;

/** What an ownership policy adds to a command. */
export type AdvanceFence = Pick<AdvanceCommand, 'fence' | 'release'>;

/** Every field of an advance command present (an absent one undefined): a field left out here does not compile. */
type EveryField = AdvanceCommand & Record<keyof AdvanceCommand, unknown>;

/** `fields` as workflow `workflowId`'s advance at `expectedVersion`, fenced by `fenced`'s fields. */
export function advanceCommand(
  workflowId: string,
  expectedVersion: number,
  fields: AdvanceFields,
  fenced: AdvanceFence = fields,
): AdvanceCommand {
  const command: EveryField = {
    workflowId,
    expectedVersion,
    ifStatus: fields.ifStatus,
    status: fields.status,
    output: fields.output,
    error: fields.error,
    completed: fields.completed,
    operations: fields.operations,
    clearTimers: fields.clearTimers,
    deleteTimers: fields.deleteTimers,
    timers: fields.timers,
    messages: fields.messages,
    consume: fields.consume,
    fence: fenced.fence,
    leaseFence: fields.leaseFence,
    release: fenced.release,
    rotate: fields.rotate,
    continueAsNew: fields.continueAsNew,
    traceContext: fields.traceContext,
    attributes: fields.attributes,
    events: fields.events,
    sends: fields.sends,
    streams: fields.streams,
    updateResults: fields.updateResults,
    handoff: fields.handoff,
  };
  return command;
}
