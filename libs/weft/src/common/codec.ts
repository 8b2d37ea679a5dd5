/**
 * A payload codec: turns the bytes of a payload (its JSON text, UTF-8) into the bytes stored, and
 * back. Weft stores its `id` beside every payload it encodes, so a history written under one codec
 * stays readable after the next one becomes current (docs/codecs.md). Either method may be async
 * (a KMS-backed codec); both must be pure functions of their input and the key the id names.
 */
export interface PayloadCodec {
  /** Stored beside each payload: names the codec and its key (`aes-gcm:2`); at most 64 characters. */
  readonly id: string;
  encode(data: Uint8Array): Uint8Array | Promise<Uint8Array>;
  decode(data: Uint8Array): Uint8Array | Promise<Uint8Array>;
}

/**
 * The `codec` option: one codec, or the one that encodes (`current`) and those older payloads may
 * still carry (`accepts`), for key rotation.
 */
export type CodecOption = PayloadCodec | { current: PayloadCodec; accepts?: PayloadCodec[] };
