// WeftModule's `codec`: classes resolved with Nest's DI (a key service injected into the codec),
// rotation with `{ current, accepts }`, and nothing of a payload stored in the clear (docs/codecs.md).
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomBytes } from 'node:crypto';
import { AesGcmCodec, type PayloadCodec, WeftEngine, WeftModule, Workflow, type WorkflowContext } from '@weft/nest';
import { createTestDatabase, type TestDatabase } from './support/database.js';

const MARKER = 'MARKER-nest-codec-5d1e';
/** The key material a KMS would hold: the same for both boots of the app. */
const KMS = new Map([
  ['k1', randomBytes(32)],
  ['k2', randomBytes(32)],
]);

/** Stands for a KMS client: hands out data keys by id. */
@Injectable()
class KeyService {
  readonly uses: string[] = [];
  key(id: string): Buffer {
    this.uses.push(id);
    return KMS.get(id)!;
  }
}

@Module({ providers: [KeyService], exports: [KeyService] })
class KeysModule {}

/** A codec whose key comes from an injected service, by its id. */
abstract class KeyedCodec implements PayloadCodec {
  private readonly aes: AesGcmCodec;
  constructor(
    keys: KeyService,
    readonly id: string,
  ) {
    this.aes = new AesGcmCodec(id, keys.key(id));
  }
  encode(b: Uint8Array) {
    return this.aes.encode(b);
  }
  decode(b: Uint8Array) {
    return this.aes.decode(b);
  }
}

/** Each key a class of its own, so WeftModule resolves it with DI (its KeyService injected). */
@Injectable()
class KeyOneCodec extends KeyedCodec {
  constructor(keys: KeyService) {
    super(keys, 'k1');
  }
}

@Injectable()
class KeyTwoCodec extends KeyedCodec {
  constructor(keys: KeyService) {
    super(keys, 'k2');
  }
}

@Workflow('sealed')
class SealedWorkflow {
  async run(ctx: WorkflowContext, input: { card: string }) {
    const masked = await ctx.step('mask', () => `${input.card}/${MARKER}-step`);
    return { masked };
  }
}

describe('WeftModule codec (real PostgreSQL)', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => tdb?.drop());

  const boot = async (codec: Parameters<typeof WeftModule.forRoot>[0]['codec']) => {
    const moduleRef = await Test.createTestingModule({
      imports: [KeysModule, WeftModule.forRoot({ database: { url: tdb.url }, schema: 'weft', shutdownGracePeriod: 0, codec })],
      providers: [SealedWorkflow, KeyOneCodec, KeyTwoCodec],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  };

  it('resolves codec classes with DI, rotates keys, and stores no payload in the clear', async () => {
    const first = await boot(KeyOneCodec);
    const engine = first.get(WeftEngine);
    const h = await engine.start('sealed', { card: `${MARKER}-input` }, { workflowId: 'sealed-1' });
    await expect(h.result({ timeout: '20s' })).resolves.toEqual({ masked: `${MARKER}-input/${MARKER}-step` });
    expect(first.get(KeyService).uses).toContain('k1');
    await first.close();

    const second = await boot({ current: KeyTwoCodec, accepts: [KeyOneCodec] });
    const again = second.get(WeftEngine);
    await expect(again.handle('sealed-1').result({ timeout: '5s' })).resolves.toEqual({ masked: `${MARKER}-input/${MARKER}-step` });
    const h2 = await again.start('sealed', { card: `${MARKER}-two` }, { workflowId: 'sealed-2' });
    await h2.result({ timeout: '20s' });
    await second.close();

    const raw = await tdb.query<{ t: string }>(
      `SELECT (SELECT string_agg(w::text, ' ') FROM weft.weft_workflows w) || (SELECT string_agg(o::text, ' ') FROM weft.weft_operations o) AS t`,
    );
    expect(raw[0].t).not.toContain(MARKER);
    const ids = await tdb.query<{ id: string; codec: string }>(
      `SELECT id, input->>'weft:codec' AS codec FROM weft.weft_workflows ORDER BY id`,
    );
    expect(ids).toEqual([
      { id: 'sealed-1', codec: 'k1' },
      { id: 'sealed-2', codec: 'k2' },
    ]);
  });
});
