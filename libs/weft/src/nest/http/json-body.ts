// Weft's own reading of its request bodies: JSON in UTF-8, at most maxPayloadBytes plus room for
// the fields around a payload, one JSON object. Every refusal is a typed error (docs/api.md).
import type { IncomingMessage } from 'node:http';
import { InvalidArgumentError } from '../../common/errors.js';
import { RequestTooLargeError, UnsupportedMediaTypeError } from '../nest-errors.js';

/** Room for the fields around a payload in a body (type, ids, options). */
export const BODY_ENVELOPE_BYTES = 64 * 1024;

/** The largest body a Weft route reads when payloads may have `maxPayloadBytes`. */
export function bodyLimit(maxPayloadBytes: number): number {
  return maxPayloadBytes + BODY_ENVELOPE_BYTES;
}

/** As type-is's hasBody: a transfer-encoding or a non-zero content-length announce one. */
function announcesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Why the headers rule the body out (a 415), or null. */
function mediaProblem(req: IncomingMessage): string | null {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
  if (encoding !== 'identity') return `Content-Encoding "${encoding.slice(0, 40)}" is not read`;
  const [type, ...params] = (req.headers['content-type'] ?? '').split(';');
  const mediaType = type.trim().toLowerCase();
  if (mediaType !== 'application/json') return `Content-Type "${mediaType.slice(0, 80) || '(none)'}" is not application/json`;
  for (const param of params) {
    const [key, value = ''] = param.split('=');
    const charset = value.trim().replace(/^"|"$/g, '').toLowerCase();
    if (key.trim().toLowerCase() === 'charset' && charset !== 'utf-8' && charset !== 'utf8') {
      return `charset "${charset.slice(0, 40)}" is not UTF-8`;
    }
  }
  return null;
}

/** Reads the rest of the body and throws it away, so the answer reaches a client still sending. */
function drain(req: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    if (req.complete || req.destroyed) return resolve();
    req.on('end', resolve).on('close', resolve).on('error', resolve).resume();
  });
}

/** The body's bytes, or a RequestTooLargeError once past `limit` (the rest is drained first). */
function readBytes(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) over = true;
      if (!over) chunks.push(chunk);
    });
    req.on('end', () => (over ? reject(new RequestTooLargeError(limit)) : resolve(Buffer.concat(chunks))));
    req.on('error', () => reject(new InvalidArgumentError('request body', 'was cut off before its end')));
    req.on('aborted', () => reject(new InvalidArgumentError('request body', 'was cut off before its end')));
  });
}

/**
 * The body of a request to a Weft route: undefined when there is none, else the JSON object it
 * holds. Not JSON, not UTF-8, not an object, or larger than `limit` bytes: a typed error, after
 * the body was read to its end.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<object | undefined> {
  if (!announcesBody(req)) return undefined;
  const problem = mediaProblem(req);
  const declared = Number(req.headers['content-length']);
  if (problem !== null || declared > limit) {
    await drain(req);
    throw problem !== null ? new UnsupportedMediaTypeError(problem) : new RequestTooLargeError(limit);
  }
  const bytes = await readBytes(req, limit);
  if (bytes.length === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InvalidArgumentError('request body', 'is not valid UTF-8');
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new InvalidArgumentError('request body', 'is not valid JSON; send one JSON object');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new InvalidArgumentError('request body', 'must be a JSON object');
  return body;
}
