import { Batcher } from './batcher.js';

/** A Batcher whose statements are recorded and answered when the test says so. */
function recording(gather: boolean, more: { maxBatch?: number; ordered?: boolean; spread?: number } = {}) {
  const sent: string[][] = [];
  const answers: Array<() => void> = [];
  const batcher = new Batcher<string, string>(
    (requests) => {
      sent.push(requests);
      return new Promise((resolve) => answers.push(() => resolve(requests.map((r) => `${r}!`))));
    },
    (r) => r,
    { gather, ...more },
  );
  return { batcher, sent, answers };
}

/** The commits of runs resumed by one outcome: each comes a few microtasks after the one before. */
async function submitAcrossMicrotasks(batcher: Batcher<string, string>, requests: string[]): Promise<Array<Promise<string>>> {
  const out: Array<Promise<string>> = [];
  for (const r of requests) {
    out.push(batcher.submit(r));
    for (let i = 0; i < 3; i++) await Promise.resolve();
  }
  return out;
}

const turnEnd = () => new Promise((r) => setImmediate(r));

describe('Batcher (pure logic)', () => {
  it('without gather, the first request of a turn takes a free statement alone', async () => {
    const { batcher, sent } = recording(false);
    void (await submitAcrossMicrotasks(batcher, ['a', 'b', 'c', 'd']));
    expect(sent).toEqual([['a'], ['b']]); // c and d wait for a statement to come back
  });

  it('with gather, the requests of one turn share the free statement', async () => {
    const { batcher, sent, answers } = recording(true);
    const results = await submitAcrossMicrotasks(batcher, ['a', 'b', 'c', 'd']);
    expect(sent).toEqual([]); // nothing before the turn ends
    await turnEnd();
    expect(sent).toEqual([['a', 'b', 'c', 'd']]);
    answers[0]!();
    await expect(Promise.all(results)).resolves.toEqual(['a!', 'b!', 'c!', 'd!']);
  });

  it('with gather, a lone request goes at the end of its turn', async () => {
    const { batcher, sent, answers } = recording(true);
    const result = batcher.submit('a');
    await turnEnd();
    expect(sent).toEqual([['a']]);
    answers[0]!();
    await expect(result).resolves.toBe('a!');
    await batcher.idle();
  });

  it('with gather, requests made while every statement is out go together when one comes back', async () => {
    const { batcher, sent, answers } = recording(true);
    void batcher.submit('a');
    await turnEnd();
    void batcher.submit('b');
    await turnEnd();
    expect(sent).toEqual([['a'], ['b']]);
    const later = await submitAcrossMicrotasks(batcher, ['c', 'd']);
    await turnEnd();
    expect(sent.length).toBe(2);
    answers[0]!();
    await turnEnd();
    expect(sent[2]).toEqual(['c', 'd']);
    answers[1]!();
    answers[2]!();
    await expect(Promise.all(later)).resolves.toEqual(['c!', 'd!']);
  });

  it('ordered: what a statement left behind goes after it comes back, not beside it', async () => {
    const { batcher, sent, answers } = recording(true, { maxBatch: 2, ordered: true });
    const results = await submitAcrossMicrotasks(batcher, ['a', 'b', 'c', 'd', 'e']);
    await turnEnd();
    expect(sent).toEqual([['a', 'b']]); // c, d and e wait although a second statement is free
    answers[0]!();
    await turnEnd();
    expect(sent).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    answers[1]!();
    await turnEnd();
    expect(sent[2]).toEqual(['e']);
    answers[2]!();
    await expect(Promise.all(results)).resolves.toEqual(['a!', 'b!', 'c!', 'd!', 'e!']);
  });

  it('not ordered: a burst larger than one statement fills both', async () => {
    const { batcher, sent } = recording(true, { maxBatch: 2 });
    void (await submitAcrossMicrotasks(batcher, ['a', 'b', 'c', 'd', 'e']));
    await turnEnd();
    expect(sent).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });

  it('spread: a group at least that large is shared evenly among the free statements', async () => {
    const { batcher, sent, answers } = recording(true, { spread: 4 });
    const results = await submitAcrossMicrotasks(batcher, ['a', 'b', 'c', 'd', 'e']);
    await turnEnd();
    expect(sent).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e'],
    ]);
    answers.forEach((answer) => answer());
    await expect(Promise.all(results)).resolves.toEqual(['a!', 'b!', 'c!', 'd!', 'e!']);
  });

  it('spread: a smaller group, or one statement free, goes whole', async () => {
    const { batcher, sent } = recording(true, { spread: 4 });
    void (await submitAcrossMicrotasks(batcher, ['a', 'b', 'c']));
    await turnEnd();
    expect(sent).toEqual([['a', 'b', 'c']]);
    void (await submitAcrossMicrotasks(batcher, ['d', 'e', 'f', 'g', 'h']));
    await turnEnd();
    expect(sent[1]).toEqual(['d', 'e', 'f', 'g', 'h']); // the only statement left free takes them all
  });

  it('spread is ignored when ordered: a later statement must start after the earlier one committed', async () => {
    const { batcher, sent } = recording(true, { spread: 2, ordered: true });
    void (await submitAcrossMicrotasks(batcher, ['a', 'b', 'c', 'd']));
    await turnEnd();
    expect(sent).toEqual([['a', 'b', 'c', 'd']]);
  });
});
