// Which emitter an uncaught 'error' came from. An 'error' event nobody listens for is thrown where
// it is emitted, and the process's uncaughtException handler only gets the error, whose stack says
// where the error was made (for pg, its protocol parser), not who emitted it. Chaos only: an engine
// that exits on one reports its emitter (as the connection a restart ended at startup would have
// been reported: docs/decisions/0067).
import { EventEmitter } from 'node:events';

const unheard = new WeakMap<object, string>();

export function watchUnheardErrors(): void {
  const emit = EventEmitter.prototype.emit;
  EventEmitter.prototype.emit = function (this: EventEmitter, type: string | symbol, ...args: unknown[]): boolean {
    const err = args[0];
    if (type === 'error' && err !== null && typeof err === 'object' && this.listenerCount('error') === 0) {
      const at = (new Error().stack ?? '').split('\n').slice(2, 12).join(' | ');
      unheard.set(err, `emitted by ${this.constructor?.name ?? 'an emitter'} with no 'error' listener, at ${at}`);
    }
    return emit.call(this, type, ...args);
  };
}

/** Who emitted `err` unheard, if it was: for the uncaught exception's report. */
export function unheardEmitter(err: unknown): string | undefined {
  return err !== null && typeof err === 'object' ? unheard.get(err) : undefined;
}
