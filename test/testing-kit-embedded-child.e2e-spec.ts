// The testing kit's embedded server in a child process: what it does for a test process that
// cannot load the server's ES modules (jest's CommonJS runtime; the Nest 11 consumer app's
// renewal.embedded.spec runs it there), and the typed error that says what to set when it fails.
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { EmbeddedDatabaseError } from '../libs/weft/src/common/errors.js';
import { startEmbeddedInChild } from '../libs/weft/src/testing/embedded-in-child.js';
import { makeTempDir, sourcePath, TS_NODE_ARGS } from './support/node-ts.js';

const child = { script: sourcePath('libs/weft/src/testing/embedded-child.ts'), execArgv: TS_NODE_ARGS };
const loadError = new Error('Must use import to load ES Module');

async function accepts(url: string): Promise<boolean> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

describe('the testing kit’s embedded server in a child process', () => {
  let dir: string;
  beforeAll(() => (dir = makeTempDir('weft-kit-child-')));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('starts the server in the child, which holds it until stop and then stops it', async () => {
    const server = await startEmbeddedInChild(path.join(dir, 'pg'), loadError, child);
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
    expect(await accepts(server.url)).toBe(true);
    await server.stop();
    expect(await accepts(server.url)).toBe(false);
  }, 120_000);

  it('fails with EmbeddedDatabaseError naming WEFT_TEST_DATABASE_URL when the child cannot start it', async () => {
    const broken = { script: path.join(dir, 'no-such-child.js'), execArgv: [] };
    const err = await startEmbeddedInChild(path.join(dir, 'pg2'), loadError, broken).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddedDatabaseError);
    expect((err as EmbeddedDatabaseError).code).toBe('WEFT_EMBEDDED_DATABASE');
    expect((err as Error).message).toContain('Set WEFT_TEST_DATABASE_URL');
  });

  it('fails with the same error when no child script can be found (an ES module runtime that cannot load it)', async () => {
    const err = await startEmbeddedInChild(path.join(dir, 'pg3'), loadError, null).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbeddedDatabaseError);
    expect((err as Error).message).toMatch(/Must use import to load ES Module.*Set WEFT_TEST_DATABASE_URL/);
  });
});
