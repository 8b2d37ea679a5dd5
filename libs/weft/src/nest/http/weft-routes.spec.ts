import { servedBases, underBases, type WeftController } from './weft-routes.js';

const workflows: WeftController = {
  base: '/weft/workflows',
  templates: ['/weft/workflows', '/weft/workflows/:id', '/weft/workflows/:id/cancel'],
  readsBodies: true,
};
const metrics: WeftController = { base: '/metrics', templates: ['/metrics'], readsBodies: false };

describe('servedBases', () => {
  it('finds each controller under the mount the app serves it at (none, a global prefix, a version)', () => {
    const paths = (mount: string) => [...workflows.templates, ...metrics.templates].map((t) => mount + t);
    expect(servedBases(paths(''), [workflows, metrics])).toEqual({ all: ['/weft/workflows', '/metrics'], bodies: ['/weft/workflows'] });
    expect(servedBases([...paths('/api/v1'), '/api/users/:id'], [workflows, metrics])).toEqual({
      all: ['/api/v1/weft/workflows', '/api/v1/metrics'],
      bodies: ['/api/v1/weft/workflows'],
    });
  });

  it("does not take an app's route that serves only part of a controller's routes", () => {
    expect(servedBases(['/admin/weft/workflows', '/admin/weft/workflows/:id'], [workflows]).all).toEqual([]);
    expect(servedBases(['/xweft/workflows', '/xweft/workflows/:id', '/xweft/workflows/:id/cancel'], [workflows]).all).toEqual([]);
  });

  it('never claims the whole app', () => {
    expect(servedBases(['/'], [{ base: '/', templates: ['/'], readsBodies: true }])).toEqual({ all: [], bodies: [] });
  });
});

describe('underBases', () => {
  it.each([
    ['/weft/workflows', true],
    ['/weft/workflows/', true],
    ['/WEFT/Workflows/x?y=1', true],
    ['/weft/workflows-x', false],
    ['/weft', false],
    ['/other/weft/workflows', false],
  ])('%s: %s', (url, under) => {
    expect(underBases(url, ['/weft/workflows'])).toBe(under);
  });
});
