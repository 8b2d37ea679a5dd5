import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext, WorkflowDefinition } from '../common/types.js';
import type { WeftEngine } from './engine.js';

interface AccountInput {
  balance: number;
  seen: number[];
  /** Messages (updates and signals) the chain waits for before it returns. */
  total: number;
  /** Run 1 holds in a step this long, then continues: what is sent meanwhile is carried over. */
  hold: number;
  /** Run 2 holds in a step this long before its first wait (another engine takes it over meanwhile). */
  hold2?: number;
  /** Run 2's first await is not a ctx call. */
  prefix?: boolean;
}

/**
 * State set up by run() from its input, as docs/continue-as-new.md recommends: a handler that ran
 * before run() would find `seen` unset (TypeError) or have its effect overwritten.
 */
class Account {
  private balance!: number;
  private seen!: Set<number>;

  async run(ctx: WorkflowContext, input: AccountInput) {
    this.balance = input.balance;
    this.seen = new Set(input.seen);
    if (ctx.runNumber === 1) {
      await ctx.step('hold', () => new Promise((r) => setTimeout(r, input.hold)));
      return ctx.continueAsNew({ ...input, balance: this.balance, seen: [...this.seen] });
    }
    if (input.prefix) await Promise.resolve();
    if (input.hold2) await ctx.step('hold-2', () => new Promise((r) => setTimeout(r, input.hold2)));
    await ctx.condition(() => this.seen.size >= input.total);
    return { balance: this.balance, seen: [...this.seen].sort((a, b) => a - b), run: ctx.runNumber };
  }

  deposit(m: { id: number; n: number }) {
    if (this.seen.has(m.id)) throw new Error(`message ${m.id} applied twice`);
    this.seen.add(m.id);
    this.balance += m.n;
    return this.balance;
  }

  add(m: { id: number; n: number }) {
    this.deposit(m);
  }

  getBalance() {
    return { balance: this.balance, seen: this.seen.size };
  }
}

const account: WorkflowDefinition = {
  name: 'account',
  factory: () => new Account() as never,
  signalHandlers: { add: 'add' },
  updateHandlers: { deposit: 'deposit' },
  queryHandlers: { balance: 'getBalance' },
};

describe('continue-as-new: messages that arrive during the switch (real PostgreSQL)', () => {
  const env = useTestEngines();
  const engine = async (opts = {}) => {
    const e = await env.pool.create(opts, (x: WeftEngine) => x.register(account));
    await e.bootstrap();
    return e;
  };

  /** Sends `updates` deposits and `signals` adds of 1..n (ids 1..), all at once; resolves with the updates' answers. */
  const send = (e: WeftEngine, id: string, updates: number, signals: number) => {
    const answers = Array.from({ length: updates }, (_, i) => e.update<number>(id, 'deposit', { id: i + 1, n: i + 1 }, { timeout: '30s' }));
    const sent = Array.from({ length: signals }, (_, i) => e.signal(id, 'add', { id: updates + i + 1, n: updates + i + 1 }));
    return Promise.all([Promise.all(answers), Promise.all(sent)]).then(([a]) => a);
  };
  const sum = (n: number) => (n * (n + 1)) / 2;

  it('carried updates and signals reach the next run after run() set its state up: none lost, none twice, each update answered', async () => {
    const e = await engine();
    const h = await e.start('account', { balance: 110, seen: [], total: 20, hold: 400 } satisfies AccountInput);
    const answers = await send(e, h.workflowId, 10, 10);
    const out = await h.result<{ balance: number; seen: number[]; run: number }>({ timeout: '30s' });
    expect(out).toEqual({ balance: 110 + sum(20), seen: Array.from({ length: 20 }, (_, i) => i + 1), run: 2 });
    // Each update saw the balance as it was after the messages applied before it: distinct, above 110.
    expect(new Set(answers).size).toBe(10);
    expect(Math.min(...answers)).toBeGreaterThan(110);
  });

  it('a run whose first await is not a ctx call: deliveries wait for its first ctx call, so a replay applies them at the same place', async () => {
    const a = await engine();
    const h = await a.start('account', { balance: 110, seen: [], total: 21, hold: 400, prefix: true } satisfies AccountInput);
    await send(a, h.workflowId, 10, 10);
    await waitFor(async () => (await a.query<{ seen: number }>(h.workflowId, 'balance')).seen === 20, 'all 20 applied');
    const live = await a.query(h.workflowId, 'balance');
    expect(live).toEqual({ balance: 110 + sum(20), seen: 20 });
    // Another engine answers by replaying the recorded history into a fresh instance.
    const b = await engine();
    await expect(b.query(h.workflowId, 'balance')).resolves.toEqual(live);
    await a.signal(h.workflowId, 'add', { id: 21, n: 21 });
    await expect(h.result({ timeout: '20s' })).resolves.toMatchObject({ balance: 110 + sum(21), run: 2 });
  });

  it('the next run taken over by another engine before its first wait: the carried messages are applied there, once, after run() began', async () => {
    const opts = { ownership: 'workflow-lease' as const, workflowClaimTtl: 1000, workflowClaimRenewInterval: 300, schema: 'can_takeover' };
    const a = await engine(opts);
    const client = await env.pool.create(opts); // runs no type: it only sends and waits
    await client.bootstrap();
    const h = await a.start('account', { balance: 110, seen: [], total: 6, hold: 400, hold2: 1500 } satisfies AccountInput);
    const updates = send(client, h.workflowId, 3, 3);
    updates.catch(() => undefined); // awaited below
    await waitFor(async () => (await h.describe()).runNumber === 2, 'run 2');
    await a.dispose(); // run 2 is in its first step: its messages are pending, none delivered yet
    const b = await engine(opts);
    const out = await b.result<{ balance: number; run: number }>(h.workflowId, { timeout: '30s' });
    expect(out).toMatchObject({ balance: 110 + sum(6), run: 2 });
    expect(new Set(await updates).size).toBe(3);
  });
});
