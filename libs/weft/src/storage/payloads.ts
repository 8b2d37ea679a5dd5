// Payloads at rest: what the engine's codec (docs/codecs.md) does to every payload column on its
// way into and out of PostgreSQL. The repositories call it on exactly the payload columns: inputs,
// outputs, operation results, message payloads and update results, events, stream entries,
// schedule inputs and workflow headers (docs/interceptors.md). Not: attributes (they must stay queryable), errors, ids, names, timings.
import { CodecMissingError, InvalidConfigurationError, PayloadCodecError } from '../common/errors.js';
import type { CodecOption, PayloadCodec } from '../common/codec.js';
import type { InboxMessage, AdvanceCommand, InsertWorkflow, WorkflowRow } from './types.js';
import type { OperationRecord } from '../common/types.js';

/** The key of an encoded payload's stored form: `{ "weft:codec": id, "data": base64 }`. */
export const CODEC_KEY = 'weft:codec';
const MAX_CODEC_ID = 64;

/** A payload as stored once encoded. */
interface Encoded {
  [CODEC_KEY]: string;
  data: string;
}

export function isEncoded(v: unknown): v is Encoded {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  return typeof o[CODEC_KEY] === 'string' && typeof o.data === 'string' && Object.keys(o).length === 2;
}

function checkedCodecs(option: CodecOption): { current: PayloadCodec; all: PayloadCodec[] } {
  const current = 'current' in option ? option.current : option;
  const all = [current, ...('current' in option ? (option.accepts ?? []) : [])];
  const seen = new Set<string>();
  for (const c of all) {
    if (typeof c?.encode !== 'function' || typeof c.decode !== 'function')
      throw new InvalidConfigurationError('codec', 'each codec needs encode(bytes) and decode(bytes) methods and an id');
    if (typeof c.id !== 'string' || c.id.length === 0 || c.id.length > MAX_CODEC_ID)
      throw new InvalidConfigurationError(
        'codec',
        `a codec id must be a string of 1 to ${MAX_CODEC_ID} characters (got ${JSON.stringify(c.id)})`,
      );
    if (seen.has(c.id)) throw new InvalidConfigurationError('codec', `codec id "${c.id}" is given twice; give each key its own id`);
    seen.add(c.id);
  }
  return { current, all };
}

/**
 * The engine's codec, applied to values (`encode`, `decode`) and to the records the repositories
 * write and read. Without a codec every method hands its input back (decode still refuses an
 * encoded payload, with CodecMissingError); a plain payload stored before a codec was set is read
 * as it is.
 */
export class Payloads {
  private readonly current: PayloadCodec | null;
  private readonly byId: Map<string, PayloadCodec>;

  /**
   * `unknown: 'mark'` (the CLI, which has no codec): a payload of a codec it lacks reads as the text
   * `[encrypted: codec "<id>"]` instead of failing, so an operator can still list and describe.
   */
  constructor(
    option?: CodecOption,
    private readonly unknown: 'refuse' | 'mark' = 'refuse',
  ) {
    if (!option) {
      this.current = null;
      this.byId = new Map();
      return;
    }
    const { current, all } = checkedCodecs(option);
    this.current = current;
    this.byId = new Map(all.map((c) => [c.id, c]));
  }

  /** Whether payloads are encoded on their way in. */
  get active(): boolean {
    return this.current !== null;
  }

  /** The stored form of `value`: encoded by the current codec (null and undefined stay as they are). */
  async encode(value: unknown): Promise<unknown> {
    const codec = this.current;
    if (!codec || value === undefined || value === null) return value;
    const bytes = Buffer.from(JSON.stringify(value), 'utf8');
    let out: Uint8Array;
    try {
      out = await codec.encode(bytes);
    } catch (cause) {
      throw new PayloadCodecError(codec.id, 'encode', { cause });
    }
    return { [CODEC_KEY]: codec.id, data: Buffer.from(out.buffer, out.byteOffset, out.byteLength).toString('base64') } satisfies Encoded;
  }

  /** The value of a stored payload. */
  async decode(stored: unknown): Promise<unknown> {
    if (!isEncoded(stored)) return stored;
    const id = stored[CODEC_KEY];
    const codec = this.byId.get(id);
    if (!codec) {
      if (this.unknown === 'mark') return `[encrypted: codec "${id}"]`;
      throw new CodecMissingError(id, [...this.byId.keys()]);
    }
    let bytes: Uint8Array;
    try {
      bytes = await codec.decode(Buffer.from(stored.data, 'base64'));
    } catch (cause) {
      throw new PayloadCodecError(id, 'decode', { cause });
    }
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as unknown;
  }

  /** An advance command with every payload it writes encoded (the same object without a codec). */
  async command(c: AdvanceCommand): Promise<AdvanceCommand> {
    if (!this.active) return c;
    const e = (v: unknown) => this.encode(v);
    const out: AdvanceCommand = { ...c };
    if (c.output) out.output = { value: await e(c.output.value) };
    if (c.operations) out.operations = await Promise.all(c.operations.map(async (o) => ({ ...o, result: await e(o.result) })));
    if (c.messages) out.messages = await Promise.all(c.messages.map(async (m) => ({ ...m, payload: await e(m.payload) })));
    if (c.consume)
      out.consume = await Promise.all(c.consume.map(async (m) => (m.result === undefined ? m : { ...m, result: await e(m.result) })));
    if (c.continueAsNew) out.continueAsNew = { ...c.continueAsNew, input: await e(c.continueAsNew.input) };
    if (c.events) out.events = await Promise.all(c.events.map(async (v) => ({ ...v, value: await e(v.value) })));
    if (c.sends) out.sends = await Promise.all(c.sends.map(async (s) => ({ ...s, payload: await e(s.payload) })));
    if (c.updateResults) out.updateResults = await Promise.all(c.updateResults.map(async (u) => ({ ...u, result: await e(u.result) })));
    if (c.streams) out.streams = await Promise.all(c.streams.map(async (s) => (s.close ? s : { ...s, value: await e(s.value) })));
    return out;
  }

  async commands(cs: AdvanceCommand[]): Promise<AdvanceCommand[]> {
    return this.active ? Promise.all(cs.map((c) => this.command(c))) : cs;
  }

  /** Starts with their inputs and start signals encoded. */
  async starts(ws: InsertWorkflow[]): Promise<InsertWorkflow[]> {
    if (!this.active) return ws;
    return Promise.all(
      ws.map(async (w) => ({
        ...w,
        input: await this.encode(w.input),
        ...(w.headers ? { headers: (await this.encode(w.headers)) as InsertWorkflow['headers'] } : {}),
        ...(w.signal ? { signal: { ...w.signal, payload: await this.encode(w.signal.payload) } } : {}),
      })),
    );
  }

  /** A workflow row with its input and output decoded (in place: the row is the caller's, fresh from a query). */
  async row<R extends Pick<WorkflowRow, 'input' | 'output'>>(r: R): Promise<R> {
    if (isEncoded(r.input)) r.input = await this.decode(r.input);
    if (isEncoded(r.output)) r.output = await this.decode(r.output);
    return r;
  }

  /** A loaded workflow's headers decoded, in place. */
  async headers(l: { headers: Record<string, string> | null }): Promise<void> {
    if (isEncoded(l.headers)) l.headers = (await this.decode(l.headers)) as Record<string, string>;
  }

  /** Operation records with their results decoded, in place. */
  async history(ops: OperationRecord[]): Promise<OperationRecord[]> {
    for (const o of ops) if (isEncoded(o.result)) o.result = await this.decode(o.result);
    return ops;
  }

  /** Inbox messages with their payloads decoded, in place. */
  async inbox(ms: InboxMessage[]): Promise<InboxMessage[]> {
    for (const m of ms) if (isEncoded(m.payload)) m.payload = await this.decode(m.payload);
    return ms;
  }
}
