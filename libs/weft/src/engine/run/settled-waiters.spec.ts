import type { Settled } from '../settled.js';
import { SettledWaiters } from './settled-waiters.js';

const done = { status: 'completed', output: 1 } as unknown as Settled;

describe('SettledWaiters (pure logic)', () => {
  it('a settle wakes a wait in progress at once, and a later wait does not wait', async () => {
    const waiters = new SettledWaiters();
    const sub = waiters.subscribe('w');
    const waiting = sub.wait(60_000);
    waiters.settle('w', done);
    await expect(waiting).resolves.toBe(done);
    await expect(sub.wait(60_000)).resolves.toBe(done);
  });

  it('a settle before the wait (between the caller read and its wait) is not missed', async () => {
    const waiters = new SettledWaiters();
    const sub = waiters.subscribe('w');
    waiters.settle('w', done);
    await expect(sub.wait(60_000)).resolves.toBe(done);
  });

  it('a wait that times out resolves null and the subscription still hears the settle', async () => {
    const waiters = new SettledWaiters();
    const sub = waiters.subscribe('w');
    await expect(sub.wait(5)).resolves.toBeNull();
    waiters.settle('w', done);
    await expect(sub.wait(60_000)).resolves.toBe(done);
  });

  it('every caller of one workflow hears it; a cancelled one no longer does', async () => {
    const waiters = new SettledWaiters();
    const [a, b, c] = [waiters.subscribe('w'), waiters.subscribe('w'), waiters.subscribe('w')];
    b.cancel();
    const waits = [a.wait(60_000), c.wait(60_000)];
    waiters.settle('w', done);
    await expect(Promise.all(waits)).resolves.toEqual([done, done]);
    await expect(b.wait(5)).resolves.toBeNull();
  });

  it('a cancel after the settle leaves a new run of the same id subscribed', async () => {
    const waiters = new SettledWaiters();
    const first = waiters.subscribe('w');
    waiters.settle('w', done);
    const second = waiters.subscribe('w'); // the id reused by a new run
    first.cancel();
    const waiting = second.wait(60_000);
    waiters.settle('w', done);
    await expect(waiting).resolves.toBe(done);
  });
});
