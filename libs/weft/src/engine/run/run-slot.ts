// A run's queue slot under releaseWhileWaiting (docs/decisions/0040) and the wakes held back while
// it has none. Execution owns it; engine/queues/slots.ts gives the slot back and takes it again.
export type SlotState = 'held' | 'released' | 'wanted';

export class RunSlot {
  /** Held; released while the run is parked; wanted once a wake came while released. */
  private _state: SlotState;
  /** Wait resolutions held back until the slot is taken again, in the order they came. */
  private heldWakes: Array<() => void> = [];

  constructor(released: boolean) {
    this._state = released ? 'released' : 'held';
  }

  get state(): SlotState {
    return this._state;
  }

  /** Its slot is being given back (a wake from now on waits for one). */
  released(): void {
    if (this._state === 'held') this._state = 'released';
  }

  /** The release did not land: it still holds its slot. */
  kept(): void {
    if (this._state === 'released') this._state = 'held';
  }

  /** Without a slot: `wake` is held back until one is taken again; the first one held back calls `want` to ask for one. */
  holdBack(wake: () => void, want: () => void): void {
    this.heldWakes.push(wake);
    if (this._state === 'released') {
      this._state = 'wanted';
      want();
    }
  }

  /** It holds a slot again: the wakes held back run, in order. False when it held one already. */
  taken(): boolean {
    if (this._state === 'held') return false;
    this._state = 'held';
    const wakes = this.heldWakes;
    this.heldWakes = [];
    for (const wake of wakes) wake();
    return true;
  }
}
