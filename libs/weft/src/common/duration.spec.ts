import { InvalidDurationError } from './errors.js';
import { MAX_DURATION_MS, parseDuration } from './duration.js';

describe('parseDuration (pure logic)', () => {
  it.each([
    [0, 0],
    [250, 250],
    ['250ms', 250],
    ['1.5s', 1500],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['36500d', MAX_DURATION_MS],
    [MAX_DURATION_MS, MAX_DURATION_MS],
  ])('%p is %p ms', (value, ms) => {
    expect(parseDuration(value, 'x')).toBe(ms);
  });

  it('bounds durations at 100 years, which PostgreSQL timestamps hold with room to spare', () => {
    expect(MAX_DURATION_MS).toBe(100 * 365 * 86_400_000);
  });

  it.each([
    ['a number past 100 years', MAX_DURATION_MS + 1],
    ['1e16 ms (PostgreSQL 22008 before)', 1e16],
    ['a string past 100 years', '36501d'],
    ['a huge string', `${'9'.repeat(400)}d`],
    ['negative', -1],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['garbage', 'soon'],
  ])('refuses %s with InvalidDurationError naming the option', (_what, value) => {
    let caught: unknown;
    try {
      parseDuration(value, 'startAfter');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidDurationError);
    expect(caught).toMatchObject({ code: 'WEFT_INVALID_DURATION', option: 'startAfter' });
    expect((caught as Error).message).toContain('at most 100 years');
  });
});
