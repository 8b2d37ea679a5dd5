import { exposeErrorStacks, metricsGuards, withoutStacks } from './http-options.js';

const guard = { canActivate: () => true };

describe('withoutStacks', () => {
  it('drops every stack, also of nested causes, and keeps the other fields', () => {
    const recorded = {
      name: 'E',
      message: 'm',
      stack: 'E: m\n at x',
      code: 'X',
      cause: { name: 'C', message: 'c', stack: 'C: c' },
      list: [{ stack: 's' }],
    };
    expect(withoutStacks(recorded)).toEqual({ name: 'E', message: 'm', code: 'X', cause: { name: 'C', message: 'c' }, list: [{}] });
    expect(withoutStacks(null)).toBeNull();
    expect(withoutStacks('text')).toBe('text');
  });

  it('cuts what is deeper than any recorded error instead of passing it through', () => {
    let deep: unknown = { stack: 'leak' };
    for (let i = 0; i < 40; i++) deep = { cause: deep };
    expect(JSON.stringify(withoutStacks(deep))).not.toContain('leak');
  });
});

describe('exposeErrorStacks', () => {
  it.each([
    [undefined, false],
    [true, false],
    [{ prefix: 'x' }, false],
    [{ guards: [] }, false],
    [{ guards: [guard] }, true],
    [{ exposeErrorStacks: true }, true],
    [{ guards: [guard], exposeErrorStacks: false }, false],
  ])('%j: %s', (http, expected) => {
    expect(exposeErrorStacks(http)).toBe(expected);
  });
});

describe('metricsGuards', () => {
  it('takes metrics.guards when given, even empty, else the http guards', () => {
    expect(metricsGuards({ http: { guards: [guard] }, metrics: true })).toEqual([guard]);
    expect(metricsGuards({ http: { guards: [guard] }, metrics: { guards: [] } })).toEqual([]);
    expect(metricsGuards({ http: true, metrics: { guards: [guard] } })).toEqual([guard]);
  });
});
