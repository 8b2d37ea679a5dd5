import fc from 'fast-check';
import { codeUnit, storableOracle } from '../../../../test/support/code-units.js';
import { InvalidArgumentError, InvalidWorkflowIdError, PayloadNotSerializableError, PayloadTooLargeError } from '../common/errors.js';
import {
  assertJsonSerializable,
  MAX_JSON_DEPTH,
  MAX_NAME_LENGTH,
  storableText,
  toStoredJson,
  unstorableText,
  validateName,
  validateReason,
  validateWorkflowId,
} from './validation.js';

/** An array nested `levels` deep: 1 is `[0]`. */
const nested = (levels: number): unknown => {
  let v: unknown = 0;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

describe('payload depth (pure logic)', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels of nesting`, () => {
    expect(() => assertJsonSerializable(nested(MAX_JSON_DEPTH), 'Workflow input')).not.toThrow();
    expect(() => assertJsonSerializable({ a: nested(MAX_JSON_DEPTH - 1) }, 'Workflow input')).not.toThrow();
  });

  it.each([MAX_JSON_DEPTH + 1, 5_000, 100_000])('refuses %p levels with PayloadNotSerializableError naming the limit', (levels) => {
    let caught: unknown;
    try {
      toStoredJson(nested(levels), 'Workflow input', 10_000_000);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PayloadNotSerializableError);
    expect((caught as Error).message).toContain(`more than ${MAX_JSON_DEPTH} levels`);
  });

  it('turns a throwing toJSON into PayloadNotSerializableError', () => {
    const bad = { toJSON: () => ({ n: BigInt(1) }) };
    expect(() => toStoredJson(bad, 'Workflow input', 1000)).toThrow(PayloadNotSerializableError);
  });
});

describe('where a payload is refused (pure logic)', () => {
  /** The path the refusal names, and its reason's start. */
  const refusal = (v: unknown) => {
    try {
      toStoredJson(v, 'Workflow input', 1_000_000);
    } catch (err) {
      const e = err as PayloadNotSerializableError;
      return { path: e.path, message: e.message };
    }
    return null;
  };

  it('names the keys and indexes down to the bad value, quoting keys that are not identifiers', () => {
    expect(refusal({ order: { items: [{ sku: 'a' }, { sku: 'b', qty: 1n }] } })?.path).toBe('$.order.items[1].qty');
    expect(refusal({ 'a b': [0, [1, () => 2]] })?.path).toBe('$["a b"][1][1]');
    expect(refusal([NaN])?.path).toBe('$[0]');
    expect(refusal(Symbol('s'))?.path).toBe('$');
  });

  it('names a cycle where it closes, a Map where it sits, and a bad key with the key', () => {
    const cyclic: Record<string, unknown> = { a: { b: 1 } };
    (cyclic.a as Record<string, unknown>).back = cyclic;
    expect(refusal(cyclic)).toMatchObject({ path: '$.a.back', message: expect.stringContaining('reference cycle') });
    expect(refusal({ m: [new Map()] })).toMatchObject({ path: '$.m[0]', message: expect.stringContaining('found a Map') });
    expect(refusal({ ok: 1, ['x\u0000']: 1 })).toMatchObject({ path: '$["x\\u0000"]', message: expect.stringContaining('in the key') });
  });

  it('walks on after a key or an index it left: a sibling is named from its parent', () => {
    expect(refusal({ a: [1, 2, { b: 3 }], c: { d: 4 }, e: [5, { f: 1n }] })?.path).toBe('$.e[1].f');
  });
});

describe('toStoredJson of scalars (pure logic)', () => {
  // Scalars skip the JSON round trip: what the run sees live must still be what replay returns.
  const roundTrip = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;

  it('gives what the JSON round trip gives, for any number, string, boolean or null', () => {
    const scalar = fc.oneof(
      fc.double(),
      fc.integer(),
      fc.string({ unit: 'grapheme' }),
      fc.string({ unit: 'binary' }),
      fc.boolean(),
      fc.constant(null),
    );
    fc.assert(
      fc.property(scalar, (v) => {
        let stored: unknown;
        try {
          stored = toStoredJson(v, 'Result of step "a"', 1_000_000);
        } catch (err) {
          expect(err).toBeInstanceOf(PayloadNotSerializableError); // NaN, Infinity
          return;
        }
        expect(Object.is(stored, roundTrip(v)) || stored === roundTrip(v)).toBe(true);
        if (typeof v === 'number') expect(Object.is(stored, roundTrip(v))).toBe(true); // -0 stored as 0
      }),
      { numRuns: 2000 },
    );
  });

  it('measures a string by its JSON text: one that escapes past the bound is refused', () => {
    const controls = '\u0001'.repeat(200); // 200 code units, 1,202 bytes of JSON
    expect(() => toStoredJson(controls, 'Result of step "a"', 1000)).toThrow(PayloadTooLargeError);
    expect(toStoredJson('x'.repeat(150), 'Result of step "a"', 1000)).toBe('x'.repeat(150));
  });
});

describe('validateName (pure logic)', () => {
  it.each(['a', 'x'.repeat(MAX_NAME_LENGTH), 'charge card', 'ünïcødé'])('accepts %p', (name) => {
    expect(validateName('step name', name)).toBe(name);
  });

  it.each([
    ['empty', ''],
    ['too long', 'x'.repeat(MAX_NAME_LENGTH + 1)],
    ['not a string', 42],
    ['with a NUL', 'a\u0000b'],
  ])('refuses a name that is %s with InvalidArgumentError', (_what, name) => {
    expect(() => validateName('step name', name)).toThrow(InvalidArgumentError);
    expect(() => validateName('step name', name)).toThrow(/^Invalid step name: /);
  });
});

const anyText = fc.string({ unit: codeUnit, maxLength: 12 });
const storable = storableOracle;
const everyString = (v: unknown, ok: (s: string) => boolean): boolean => {
  if (typeof v === 'string') return ok(v);
  if (Array.isArray(v)) return v.every((x) => everyString(x, ok));
  if (v !== null && typeof v === 'object') return Object.entries(v).every(([k, x]) => ok(k) && everyString(x, ok));
  return true;
};

describe('the storable-text rule (property-based, pure logic)', () => {
  it('unstorableText finds exactly the strings with a NUL or a lone surrogate', () => {
    fc.assert(
      fc.property(anyText, (s) => {
        expect(unstorableText(s) === null).toBe(storable(s));
      }),
      { numRuns: 5000 },
    );
  });

  it('toStoredJson refuses a value iff one of its strings or keys, at any depth, breaks the rule; else it is the JSON round trip', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: codeUnit, maxDepth: 4 }), (v) => {
        let stored: unknown;
        try {
          stored = toStoredJson(v, 'Workflow input', 1_000_000);
        } catch (err) {
          expect(err).toBeInstanceOf(PayloadNotSerializableError);
          expect(everyString(v, storable)).toBe(false);
          // The message names where, and can itself be stored (a step's recorded error).
          expect(unstorableText((err as Error).message)).toBeNull();
          return;
        }
        expect(everyString(v, storable)).toBe(true);
        expect(stored).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 2000 },
    );
  });

  it('a toJSON() result is held to the rule too', () => {
    const sneaky = { toJSON: () => ({ note: 'a\u0000' }) };
    expect(() => toStoredJson({ at: sneaky }, 'Workflow input', 1000)).toThrow(PayloadNotSerializableError);
    expect(toStoredJson({ at: new Date(0) }, 'Workflow input', 1000)).toEqual({ at: '1970-01-01T00:00:00.000Z' });
  });

  it('storableText leaves storable text alone and makes any other storable', () => {
    fc.assert(
      fc.property(anyText, (s) => {
        const out = storableText(s);
        expect(unstorableText(out)).toBeNull();
        expect(out.length).toBe(s.length);
        if (storable(s)) expect(out).toBe(s);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('ids and reasons (pure logic)', () => {
  it.each(['a', '.hidden', '...', 'a.', 'order/1', 'ünïcødé', '\ud83d\ude00', 'x'.repeat(255)])('accepts the id %p', (id) => {
    expect(validateWorkflowId(id)).toBe(id);
  });

  it.each([
    ['"."', '.'],
    ['".."', '..'],
    ['a C0 control', 'a\u0001'],
    ['DEL', 'a\u007f'],
    ['a C1 control', 'a\u0085'],
    ['the last C1 control', '\u009f'],
    ['a lone surrogate', 'a\udc00'],
    ['a NUL', 'a\u0000'],
  ])('refuses an id with %s', (_what, id) => {
    expect(() => validateWorkflowId(id)).toThrow(InvalidWorkflowIdError);
  });

  it('a reason is a string of at most 1000 characters that PostgreSQL can store', () => {
    expect(validateReason('cancel reason', 'x'.repeat(1000))).toHaveLength(1000);
    expect(() => validateReason('cancel reason', 'x'.repeat(1001))).toThrow(InvalidArgumentError);
    expect(() => validateReason('cancel reason', 42)).toThrow(InvalidArgumentError);
    expect(() => validateReason('cancel reason', 'a\u0000')).toThrow(PayloadNotSerializableError);
    expect(() => validateReason('cancel reason', '\ud800')).toThrow(PayloadNotSerializableError);
  });
});
