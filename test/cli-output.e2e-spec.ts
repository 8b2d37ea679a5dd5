import { createTestDatabase, TestDatabase } from './support/database.js';
import { runCli, type Ran } from './support/cli.js';
import { quietLogger } from './support/engine.js';
import { WeftEngine } from '../libs/weft/src/engine/engine.js';

/**
 * What the `weft` CLI prints never carries a control character raw: C0, DEL, C1 (U+009B is a
 * terminal's CSI on its own) and U+2028/U+2029 are escapes in tables, in --json (where
 * JSON.stringify alone left C1 and U+2028 raw) and in error messages. The rows are written
 * directly, as an older version (ids with C1 were accepted) or any payload could have stored them.
 */

const NASTY = 'a\u0085b\u009b2Jc\u2028d\u2029e\u007ff\u001b[31mg';
/** Any control character but the newlines the output itself is made of. */
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;

describe('weft CLI output escapes control characters in every mode', () => {
  let tdb: TestDatabase;
  const w = (...args: string[]): Promise<Ran> => runCli([...args, '--schema', 'weft'], { env: { DATABASE_URL: tdb.url } });

  beforeAll(async () => {
    tdb = await createTestDatabase();
    const engine = await WeftEngine.create({
      database: { url: tdb.url, poolSize: 4 },
      schema: 'weft',
      logger: quietLogger(),
      ownership: 'none',
    });
    await engine.bootstrap();
    await engine.dispose();
    await tdb.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input, output, error) VALUES
         ('esc-1', $1, 'failed', $2::json, NULL, $3::json),
         ($4, 'plain', 'completed', NULL, $5::json, NULL)`,
      [
        'type\u009by',
        JSON.stringify({ note: NASTY, ['k\u0085']: 1 }),
        JSON.stringify({ name: 'E', message: NASTY }),
        'old\u0085id',
        JSON.stringify(NASTY),
      ],
    );
    await tdb.query(
      `INSERT INTO weft.weft_operations (workflow_id, seq, kind, name, status, result) VALUES ('esc-1', 0, 'step', $1, 'completed', $2::json)`,
      ['st\u0085ep', JSON.stringify(NASTY)],
    );
  });

  afterAll(async () => {
    await tdb?.drop();
  });

  it('list, describe and history: tables and --json', async () => {
    const [list, listJson, describe, describeJson, history, historyJson] = await Promise.all([
      w('list'),
      w('list', '--json'),
      w('describe', 'esc-1'),
      w('describe', 'esc-1', '--json'),
      w('history', 'esc-1'),
      w('history', 'esc-1', '--json'),
    ]);
    for (const r of [list, listJson, describe, describeJson, history, historyJson]) {
      expect(r.code).toBe(0);
      expect(r.stdout).not.toMatch(RAW);
      expect(r.stderr).not.toMatch(RAW);
    }
    // --json gives the very strings back to a JSON parser.
    const items = (JSON.parse(listJson.stdout) as { items: Array<{ workflowId: string; type: string }> }).items;
    expect(items.map((i) => [i.workflowId, i.type]).sort()).toEqual([
      ['esc-1', 'type\u009by'],
      ['old\u0085id', 'plain'],
    ]);
    expect(JSON.parse(describeJson.stdout)).toMatchObject({ input: { note: NASTY, ['k\u0085']: 1 }, error: { message: NASTY } });
    expect(JSON.parse(historyJson.stdout)).toMatchObject({ operations: [{ name: 'st\u0085ep', result: NASTY }] });
    expect(listJson.stdout).toContain('old\\u0085id');
    expect(list.stdout).toContain('old\\u0085id');
    expect(describe.stdout).toContain('\\u009b2J');
  });

  it('an error naming a workflow id, as text and as --json', async () => {
    const [text, json] = await Promise.all([w('describe', 'gone\u2028x\u009b'), w('describe', 'gone\u2028x\u009b', '--json')]);
    // U+2028 is a valid id character; U+009B is not: the id is refused before any read.
    expect(text.code).toBe(2);
    const [notFoundText, notFoundJson] = await Promise.all([w('describe', 'gone\u2028x'), w('describe', 'gone\u2028x', '--json')]);
    for (const r of [text, json, notFoundText, notFoundJson]) {
      expect(r.stderr).not.toMatch(RAW);
      expect(r.stdout).toBe('');
    }
    expect(notFoundText.stderr).toContain('gone\\u2028x');
    expect(JSON.parse(notFoundJson.stderr)).toMatchObject({
      error: { code: 'WEFT_WORKFLOW_NOT_FOUND', message: expect.stringContaining('gone\u2028x') },
    });
  });
});
