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

function stored(id: string, bytes: Uint8Array): Encoded {
  return { [CODEC_KEY]: id, data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}

function parsed(bytes: Uint8Array): unknown {
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as unknown;
}

/** `item[key] = v`, at once, or once `v` settles when it is a promise (added to `pending`). */
function settle<T extends object, K extends keyof T>(item: T, key: K, v: unknown, pending: Promise<unknown>[]): void {
  if (v instanceof Promise) pending.push(v.then((x) => (item[key] = x as T[K])));
  else item[key] = v as T[K];
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
   * The ids of the codecs whose latest decode answered with a promise: admittedNow does not try
   * them (its try would decode for nothing, the run's load decoding again). A decode that answers
   * at once takes its codec off, so one that answers later only until it has cached a key is tried again.
   */
  private readonly decodesLater = new Set<string>();

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
    return this.encodeNow(value);
  }

  /**
   * encode without a promise when the codec answers synchronously (AesGcmCodec does): an advance
   * command's payloads are encoded without a microtask each. A Promise only for an async codec.
   */
  private encodeNow(value: unknown): unknown {
    const codec = this.current;
    if (!codec || value === undefined || value === null) return value;
    let out: Uint8Array | Promise<Uint8Array>;
    try {
      out = codec.encode(Buffer.from(JSON.stringify(value), 'utf8'));
    } catch (cause) {
      throw new PayloadCodecError(codec.id, 'encode', { cause });
    }
    if (out instanceof Uint8Array) return stored(codec.id, out);
    return Promise.resolve(out).then(
      (bytes) => stored(codec.id, bytes),
      (cause: unknown) => {
        throw new PayloadCodecError(codec.id, 'encode', { cause });
      },
    );
  }

  /** The value of a stored payload. */
  async decode(stored: unknown): Promise<unknown> {
    return this.decodeNow(stored);
  }

  /** decode without a promise when the codec answers synchronously; a Promise only for an async codec. */
  private decodeNow(stored: unknown): unknown {
    if (!isEncoded(stored)) return stored;
    const id = stored[CODEC_KEY];
    const codec = this.byId.get(id);
    if (!codec) {
      if (this.unknown === 'mark') return `[encrypted: codec "${id}"]`;
      throw new CodecMissingError(id, [...this.byId.keys()]);
    }
    let out: Uint8Array | Promise<Uint8Array>;
    try {
      out = codec.decode(Buffer.from(stored.data, 'base64'));
    } catch (cause) {
      throw new PayloadCodecError(id, 'decode', { cause });
    }
    if (out instanceof Uint8Array) {
      if (this.decodesLater.size) this.decodesLater.delete(id);
      return parsed(out);
    }
    this.decodesLater.add(id);
    return Promise.resolve(out).then(parsed, (cause: unknown) => {
      throw new PayloadCodecError(id, 'decode', { cause });
    });
  }

  /**
   * A copy of `item` with `item[key]` encoded: at once for a synchronous codec, else once the
   * promise added to `pending` settles (the caller awaits them all before using the copy).
   */
  private encodedCopy<T extends object, K extends keyof T>(item: T, key: K, pending: Promise<unknown>[]): T {
    const copy = { ...item };
    this.encodeInto(copy, key, pending);
    return copy;
  }

  /** An advance command with every payload it writes encoded (the same object without a codec). */
  async command(c: AdvanceCommand): Promise<AdvanceCommand> {
    if (!this.active) return c;
    const p: Promise<unknown>[] = [];
    const out: AdvanceCommand = { ...c };
    if (c.output) out.output = this.encodedCopy(c.output, 'value', p);
    if (c.operations) out.operations = c.operations.map((o) => this.encodedCopy(o, 'result', p));
    if (c.messages) out.messages = c.messages.map((m) => this.encodedCopy(m, 'payload', p));
    if (c.consume) out.consume = c.consume.map((m) => (m.result === undefined ? m : this.encodedCopy(m, 'result', p)));
    if (c.continueAsNew) out.continueAsNew = this.encodedCopy(c.continueAsNew, 'input', p);
    if (c.events) out.events = c.events.map((v) => this.encodedCopy(v, 'value', p));
    if (c.sends) out.sends = c.sends.map((s) => this.encodedCopy(s, 'payload', p));
    if (c.updateResults) out.updateResults = c.updateResults.map((u) => this.encodedCopy(u, 'result', p));
    if (c.streams) out.streams = c.streams.map((s) => (s.close ? s : this.encodedCopy(s, 'value', p)));
    if (p.length) await Promise.all(p);
    return out;
  }

  async commands(cs: AdvanceCommand[]): Promise<AdvanceCommand[]> {
    return this.active ? Promise.all(cs.map((c) => this.command(c))) : cs;
  }

  /** Starts with their inputs and start signals encoded. */
  async starts(ws: InsertWorkflow[]): Promise<InsertWorkflow[]> {
    if (!this.active) return ws;
    const p: Promise<unknown>[] = [];
    const out = ws.map((w) => {
      const copy = this.encodedCopy(w, 'input', p);
      if (w.headers) this.encodeInto(copy, 'headers', p);
      if (w.signal) copy.signal = this.encodedCopy(w.signal, 'payload', p);
      return copy;
    });
    if (p.length) await Promise.all(p);
    return out;
  }

  /** `item[key]` encoded in place (`item` is a copy of ours). */
  private encodeInto<T extends object, K extends keyof T>(item: T, key: K, pending: Promise<unknown>[]): void {
    let v: unknown;
    try {
      v = this.encodeNow(item[key]);
    } catch (err) {
      pending.push(Promise.reject(err)); // awaited with the others: none is left unhandled
      return;
    }
    settle(item, key, v, pending);
  }

  /** A workflow row with its input and output decoded (in place: the row is the caller's, fresh from a query). */
  async row<R extends Pick<WorkflowRow, 'input' | 'output'>>(r: R): Promise<R> {
    if (isEncoded(r.input)) r.input = await this.decodeNow(r.input);
    if (isEncoded(r.output)) r.output = await this.decodeNow(r.output);
    return r;
  }

  /** A loaded workflow's headers decoded, in place. */
  async headers(l: { headers: Record<string, string> | null }): Promise<void> {
    if (isEncoded(l.headers)) l.headers = (await this.decodeNow(l.headers)) as Record<string, string>;
  }

  /**
   * An admitted workflow's input, headers and messages decoded in place, at once (the launch that
   * follows is synchronous). False when one needs an asynchronous codec or does not decode: the
   * caller loads the run instead, whose load decodes it or reports why not. A codec is known to be
   * asynchronous by the promise of its latest decode, so only the first admission decodes for nothing.
   */
  admittedNow(w: { input: unknown; headers?: Record<string, string> | null; inbox: InboxMessage[] }): boolean {
    try {
      if (isEncoded(w.input)) w.input = this.decodeAtOnce(w.input);
      if (isEncoded(w.headers)) w.headers = this.decodeAtOnce(w.headers) as Record<string, string>;
      for (const m of w.inbox) if (isEncoded(m.payload)) m.payload = this.decodeAtOnce(m.payload);
      return true;
    } catch {
      return false;
    }
  }

  /** decodeNow's value, or a throw when the codec answers with a promise. */
  private decodeAtOnce(stored: Encoded): unknown {
    if (this.decodesLater.has(stored[CODEC_KEY])) throw new Error('an asynchronous codec');
    const v = this.decodeNow(stored);
    if (!(v instanceof Promise)) return v;
    v.catch(() => undefined); // not used: the caller's load decodes it again
    throw new Error('an asynchronous codec');
  }

  // The loops below decode one payload at a time, as before: an asynchronous codec (a KMS) is not
  // sent a whole history at once. `decodeNow`'s value is awaited only when it is a promise.

  /** Operation records with their results decoded, in place. */
  async history(ops: OperationRecord[]): Promise<OperationRecord[]> {
    for (const o of ops) {
      if (!isEncoded(o.result)) continue;
      const v = this.decodeNow(o.result);
      o.result = v instanceof Promise ? await v : v;
    }
    return ops;
  }

  /** Inbox messages with their payloads decoded, in place. */
  async inbox(ms: InboxMessage[]): Promise<InboxMessage[]> {
    for (const m of ms) {
      if (!isEncoded(m.payload)) continue;
      const v = this.decodeNow(m.payload);
      m.payload = v instanceof Promise ? await v : v;
    }
    return ms;
  }
}
