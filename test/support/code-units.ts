import fc from 'fast-check';

/**
 * One UTF-16 code unit (or a pair), weighted towards the ones PostgreSQL cares about: NUL, both
 * surrogate halves alone, a pair in either order, and C1 and U+2028 (storable, whatever a terminal
 * makes of them). fast-check's own units never produce a lone surrogate.
 */
export const codeUnit = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) },
  {
    weight: 4,
    arbitrary: fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00', '\ude00\ud83d', '\u0085', '\u2028', 'a'),
  },
);

/** An independent oracle: PostgreSQL stores a string iff it has no NUL and is well-formed UTF-16 (it survives UTF-8). */
export const storableOracle = (s: string) => !s.includes('\u0000') && Buffer.from(s, 'utf8').toString('utf8') === s;
