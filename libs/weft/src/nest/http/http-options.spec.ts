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
      list: [{ name: 'L', stack: 's' }],
    };
    expect(withoutStacks(recorded)).toEqual({
      name: 'E',
      message: 'm',
      code: 'X',
      cause: { name: 'C', message: 'c' },
      list: [{ name: 'L' }],
    });
    expect(withoutStacks(null)).toBeNull();
    expect(withoutStacks('text')).toBe('text');
  });

  it('finds recorded errors at any depth of a recorded value, and keeps data that is not an error', () => {
    const child = { status: 'failed', error: { name: 'StepFailedError', message: 'm', stack: 'at /srv/app.js' } };
    const at = new Date(0);
    const value = { history: [{ result: child, startedAt: at }], output: { stack: [1, 2], pile: { stack: 'pancakes' } } };
    expect(withoutStacks(value)).toEqual({
      history: [{ result: { status: 'failed', error: { name: 'StepFailedError', message: 'm' } }, startedAt: at }],
      output: { stack: [1, 2], pile: { stack: 'pancakes' } },
    });
    let nested: unknown = 0;
    for (let i = 0; i < 150; i++) nested = [nested]; // deeper than a payload may be: kept whole
    expect(withoutStacks({ input: nested })).toEqual({ input: nested });
  });

  it('cuts what is deeper than anything stored instead of passing it through', () => {
    let deep: unknown = { name: 'E', stack: 'leak' };
    for (let i = 0; i < 300; i++) deep = { cause: deep };
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
