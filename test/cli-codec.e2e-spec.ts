import { randomBytes } from 'node:crypto';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { runCli, type Ran } from './support/cli.js';
import { quietLogger } from './support/engine.js';
import { sourcePath } from './support/node-ts.js';
import { WeftEngine } from '../libs/weft/src/engine/engine.js';
import { AesGcmCodec } from '../libs/weft/src/common/aes-gcm-codec.js';
import type { WorkflowContext } from '../libs/weft/src/common/types.js';

/**
 * `weft --codec MODULE` (docs/cli.md): given the app's codec, list, describe and history show the
 * payloads decoded; without it they show `[encrypted: codec "k1"]`, never the stored ciphertext.
 */
const KEY = randomBytes(32);
const SECRET = 'MARKER-cli-codec-91c2';

describe('weft --codec', () => {
  let tdb: TestDatabase;
  const w = (...args: string[]): Promise<Ran> =>
    runCli([...args, '--schema', 'weft'], { env: { DATABASE_URL: tdb.url, CODEC_KEY_HEX: KEY.toString('hex') } });
  const withCodec = (...args: string[]) => w(...args, '--codec', sourcePath('test/fixtures/cli-codec.ts'));

  beforeAll(async () => {
    tdb = await createTestDatabase();
    const engine = await WeftEngine.create({
      database: { url: tdb.url, poolSize: 4 },
      schema: 'weft',
      logger: quietLogger(),
      ownership: 'none',
      codec: new AesGcmCodec('k1', KEY),
    });
    engine.register({
      name: 'secret',
      factory: () =>
        ({
          run: async (ctx: WorkflowContext, input: { card: string }) => ctx.step('charge', () => ({ charged: input.card })),
        }) as never,
    });
    await engine.bootstrap();
    await engine.start('secret', { card: SECRET }, { workflowId: 'sec-1' }).then((h) => h.result({ timeout: '30s' }));
    await engine.dispose();
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it('decodes payloads in describe, history and list with --codec; marks them without', async () => {
    const [describe, history, list, plainDescribe, plainHistory] = await Promise.all([
      withCodec('describe', 'sec-1', '--json'),
      withCodec('history', 'sec-1', '--json'),
      withCodec('list', '--include', 'input,output', '--json'),
      w('describe', 'sec-1', '--json'),
      w('history', 'sec-1', '--json'),
    ]);
    for (const r of [describe, history, list, plainDescribe, plainHistory]) expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(describe.stdout)).toMatchObject({ input: { card: SECRET }, output: { charged: SECRET } });
    expect(JSON.parse(history.stdout)).toMatchObject({ operations: [{ name: 'charge', result: { charged: SECRET } }] });
    expect(JSON.parse(list.stdout)).toMatchObject({
      items: [{ workflowId: 'sec-1', input: { card: SECRET }, output: { charged: SECRET } }],
    });
    expect(JSON.parse(plainDescribe.stdout)).toMatchObject({ input: '[encrypted: codec "k1"]', output: '[encrypted: codec "k1"]' });
    expect(JSON.parse(plainHistory.stdout)).toMatchObject({ operations: [{ result: '[encrypted: codec "k1"]' }] });
    for (const r of [plainDescribe, plainHistory]) expect(r.stdout).not.toContain(SECRET);
  });

  it('refuses a --codec module that cannot be imported or exports no codec (bad usage, exit 2)', async () => {
    const [missing, none] = await Promise.all([
      w('describe', 'sec-1', '--codec', './no/such/module.js'),
      w('describe', 'sec-1', '--codec', sourcePath('test/fixtures/sleepy-workflow.ts')),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--codec');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('must export "codec"');
  });
});
