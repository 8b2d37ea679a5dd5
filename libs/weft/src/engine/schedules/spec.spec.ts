import { describe, expect, it } from 'vitest';
import { dueFires, fireTimesAfter, fireTimesBetween, fireWorkflowId, intervalAround, resolveRule, resolveSchedule } from './spec.js';

const iso = (ds: Date[]) => ds.map((d) => d.toISOString());
const at = (s: string) => new Date(s);

describe('schedule fire times (pure)', () => {
  it('cron in Europe/Berlin across the spring-forward change: the skipped 02:30 fires at 03:00 local, then 02:30 again', () => {
    const r = resolveRule({ cron: '30 2 * * *', timezone: 'Europe/Berlin' });
    expect(iso(fireTimesAfter(r, at('2026-03-28T00:00:00Z'), 3))).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 02:30 does not exist: 03:00 CEST
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
  });

  it('cron across the fall-back change fires once for the repeated hour', () => {
    const r = resolveRule({ cron: '30 2 * * *', timezone: 'Europe/Berlin' });
    const times = iso(fireTimesAfter(r, at('2026-10-24T12:00:00Z'), 3));
    expect(times[0]).toBe('2026-10-25T00:30:00.000Z'); // the first 02:30 (CEST)
    expect(times[1]).toBe('2026-10-26T01:30:00.000Z'); // next day 02:30 CET: the repeated 02:30 did not fire twice
    expect(new Set(times).size).toBe(3);
  });

  it('an hourly cron in America/New_York keeps local hours through DST', () => {
    const r = resolveRule({ cron: '0 9 * * 1-5', timezone: 'America/New_York' });
    expect(iso(fireTimesAfter(r, at('2026-03-06T00:00:00Z'), 2))).toEqual(['2026-03-06T14:00:00.000Z', '2026-03-09T13:00:00.000Z']);
  });

  it('every is aligned to the epoch, so every engine computes the same fire times', () => {
    const r = resolveRule({ every: '15s' });
    expect(iso(fireTimesAfter(r, at('2026-12-03T10:00:07.123Z'), 2))).toEqual(['2026-12-03T10:00:15.000Z', '2026-12-03T10:00:30.000Z']);
    expect(iso(fireTimesAfter(r, at('2026-12-03T10:00:15.000Z'), 1))).toEqual(['2026-12-03T10:00:30.000Z']); // strictly after
    expect(intervalAround(r, new Date())).toBe(15_000);
  });

  it('fireTimesBetween is inclusive and keeps the latest when bounded', () => {
    const r = resolveRule({ every: '1s' });
    const { times, dropped } = fireTimesBetween(r, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:09Z'), 3);
    expect(iso(times)).toEqual(['2026-01-01T00:00:07.000Z', '2026-01-01T00:00:08.000Z', '2026-01-01T00:00:09.000Z']);
    expect(dropped).toBe(7);
    const cron = resolveRule({ cron: '*/10 * * * * *' });
    const c = fireTimesBetween(cron, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:01:00Z'), 100);
    expect(c.times).toHaveLength(7);
  });

  it('dueFires: inside the catch-up window they are due, before it they are missed', () => {
    const r = resolveRule({ every: '1s' });
    // next fire 10:00:00, engines came back at 10:00:05.5, window 2 s: 10:00:04 and :05 are due; :00–:03 missed.
    const d = dueFires(r, at('2026-01-01T10:00:00Z'), at('2026-01-01T10:00:05.500Z'), 2000, 100);
    expect(iso(d.due)).toEqual(['2026-01-01T10:00:04.000Z', '2026-01-01T10:00:05.000Z']);
    expect(d.missed).toBe(4);
    expect(d.lastMissed?.toISOString()).toBe('2026-01-01T10:00:03.000Z');
    expect(dueFires(r, at('2026-01-01T10:00:06Z'), at('2026-01-01T10:00:05Z'), 1000, 100)).toEqual({
      due: [],
      missed: 0,
      lastMissed: null,
    });
  });

  it('a minutely cron after a year-long outage stays bounded', () => {
    const r = resolveRule({ cron: '* * * * *' });
    const started = performance.now();
    const d = dueFires(r, at('2025-01-01T00:00:00Z'), at('2026-01-01T00:00:00Z'), 60_000, 100);
    expect(d.due.length).toBeLessThanOrEqual(2);
    expect(d.missed).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(60_000); // a hang, not a timing target
  });

  it('fire ids are the schedule id and the fire time', () => {
    expect(fireWorkflowId('nightly', at('2026-01-01T03:00:00Z'))).toBe('nightly@2026-01-01T03:00:00.000Z');
  });

  it.each([
    [{ id: 's', workflowType: 'w' }, /exactly one of "cron" and "every"/],
    [{ id: 's', workflowType: 'w', cron: '* * * * *', every: '1s' }, /exactly one/],
    [{ id: 's', workflowType: 'w', cron: 'not a cron' }, /not a valid cron expression/],
    [{ id: 's', workflowType: 'w', cron: '* * * * *', timezone: 'Mars/Olympus' }, /not an IANA time zone/],
    [{ id: 's', workflowType: 'w', every: '1s', timezone: 'UTC' }, /applies to "cron" only/],
    [{ id: 's', workflowType: 'w', every: '10ms' }, /at least 1000ms/],
    [{ id: 's', workflowType: 'w', every: '1s', overlap: 'sometimes' }, /overlap/],
    [{ id: 'x'.repeat(201), workflowType: 'w', every: '1s' }, /at most 200/],
    [{ id: '', workflowType: 'w', every: '1s' }, /schedule id/],
    [{ id: 's', workflowType: 'w', every: '1s', catchupWindow: '-1s' }, /catchupWindow/],
  ])('refuses %j', (o, message) => {
    expect(() => resolveSchedule(o as never)).toThrow(message);
    expect(() => resolveSchedule(o as never)).toThrow(expect.objectContaining({ code: expect.stringMatching(/^WEFT_INVALID_/) }));
  });
});
