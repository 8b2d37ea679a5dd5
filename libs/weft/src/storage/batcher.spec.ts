import { Batcher } from './batcher.js';

// The batcher alone (no database): what goes in which statement. The statements it sends for the
// engine are covered by the specs of their callers.

/** A batcher whose statements the test answers one by one. */
function recording(opts: ConstructorParameters<typeof Batcher<number, number>>[4] = {}) {
  const sent: number[][] = [];
  const answers: Array<() => void> = [];
  const batcher = new Batcher<number, number>(
    (xs) => {
      sent.push(xs);
      return new Promise((resolve) => answers.push(() => resolve(xs.map((x) => x * 10))));
    },
    (x) => String(x),
    4,
    2,
    opts,
  );
  const answerNext = async () => {
    answers.shift()!();
    await new Promise((r) => setImmediate(r));
  };
  return { batcher, sent, answerNext };
}

describe('Batcher', () => {
  it('sends a lone request at once and the next ones together while two statements are out', async () => {
    const { batcher, sent, answerNext } = recording();
    const results = [1, 2, 3, 4].map((x) => batcher.submit(x));
    expect(sent).toEqual([[1], [2]]);
    await answerNext();
    expect(sent).toEqual([[1], [2], [3, 4]]);
    await answerNext();
    await answerNext();
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40]);
  });

  it('gather: the requests of one turn go together, the first one too', async () => {
    const { batcher, sent, answerNext } = recording({ gather: true });
    const results = [1, 2, 3, 4, 5, 6].map((x) => batcher.submit(x));
    expect(sent).toEqual([]);
    await Promise.resolve();
    expect(sent).toEqual([
      [1, 2, 3, 4],
      [5, 6],
    ]);
    await answerNext();
    await answerNext();
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40, 50, 60]);
  });

  it('held: a held request waits in line, the others pass it, and it goes in order once released', async () => {
    let holding = true;
    const { batcher, sent, answerNext } = recording({ held: (x) => holding && x % 2 === 0 });
    const results = [1, 2, 3, 4, 5].map((x) => batcher.submit(x));
    expect(sent).toEqual([[1], [3]]);
    await answerNext();
    expect(sent).toEqual([[1], [3], [5]]);
    await answerNext();
    await answerNext();
    let idle = false;
    void batcher.idle().then(() => (idle = true));
    await new Promise((r) => setImmediate(r));
    expect([sent.length, idle]).toEqual([3, false]); // held ones keep it busy
    holding = false;
    batcher.release();
    expect(sent[3]).toEqual([2, 4]);
    await answerNext();
    expect(await Promise.all(results)).toEqual([10, 20, 30, 40, 50]);
    expect(idle).toBe(true);
  });
});
