import fc from 'fast-check';
import { InvalidArgumentError, PayloadNotSerializableError, PayloadTooLargeError } from '../common/errors.js';
import { assertJsonSerializable, MAX_JSON_DEPTH, MAX_NAME_LENGTH, toStoredJson, validateName } from './validation.js';

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
