import type { Ownership } from '../ownership/ownership.js';
import type { RuntimeHooks } from './runtime-types.js';

/** The runtime's ownership hooks, all answered by the Ownership layer. */
export function ownershipHooks(o: Ownership): Omit<RuntimeHooks, 'startChild' | 'terminated'> {
  return {
    decorate: (c, epoch) => o.decorate(c, epoch),
    committed: (c, outcome) => o.committed(c, outcome),
    holds: (id) => o.holds(id),
    mayRun: (id) => o.mayRun(id),
    epochOf: (id) => o.registry?.epochOf(id) ?? o.lease?.fence()?.epoch,
    wakeCheck: (id, epoch, kind) => o.wakeCheck(id, epoch, kind),
    // A workflow this engine went to drive is not running: let go of its claim.
    notRunning: (id) => void o.registry?.release(id).catch(() => undefined),
  };
}
