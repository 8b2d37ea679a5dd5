import { describe, expect, it } from 'vitest';
import { dueFires, fireTimesAfter, fireWorkflowId, intervalAround, resolveRule, resolveSchedule } from './spec.js';

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

  it('dueFires: inside the catch-up window they are due, before it they are missed', () => {
    const r = resolveRule({ every: '1s' });
    // next fire 10:00:00, engines came back at 10:00:05.5, window 2 s: 10:00:04 and :05 are due; :00–:03 missed.
    const d = dueFires(r, at('2026-01-01T10:00:00Z'), at('2026-01-01T10:00:05.500Z'), { windowMs: 2000, onTimeMs: 1000 }, 100);
    expect(iso(d.due)).toEqual(['2026-01-01T10:00:04.000Z', '2026-01-01T10:00:05.000Z']);
    expect(d.missed).toBe(4);
    expect(d.lastMissed?.toISOString()).toBe('2026-01-01T10:00:03.000Z');
    expect(dueFires(r, at('2026-01-01T10:00:06Z'), at('2026-01-01T10:00:05Z'), { windowMs: 1000, onTimeMs: 1000 }, 100)).toEqual({
      due: [],
      missed: 0,
      lastMissed: null,
    });
  });

  it('a minutely cron after a year-long outage stays bounded', () => {
    const r = resolveRule({ cron: '* * * * *' });
    const started = performance.now();
    const d = dueFires(r, at('2025-01-01T00:00:00Z'), at('2026-01-01T00:00:00Z'), { windowMs: 60_000, onTimeMs: 2000 }, 100);
    expect(d.due.length).toBeLessThanOrEqual(2);
    expect(d.missed).toBeGreaterThan(0);
    expect(performance.now() - started).toBeLessThan(60_000); // a hang, not a timing target
  });

  // #32 item 12: '0 2,3' and '0,30 2' used to fire in both occurrences of the repeated 02:00 hour.
  it.each([
    ['0 2,3 * * *', ['2026-10-25T00:00:00.000Z', '2026-10-25T02:00:00.000Z', '2026-10-26T01:00:00.000Z']],
    ['0,30 2 * * *', ['2026-10-25T00:00:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:00:00.000Z']],
    ['0 2 * * *', ['2026-10-25T00:00:00.000Z', '2026-10-26T01:00:00.000Z', '2026-10-27T01:00:00.000Z']],
  ])('fall-back in Europe/Berlin: %s fires once in the repeated hour', (cron, expected) => {
    const r = resolveRule({ cron, timezone: 'Europe/Berlin' });
    expect(iso(fireTimesAfter(r, at('2026-10-24T23:00:00Z'), 3))).toEqual(expected);
    // The same fire times when the outage covered the change and the pass catches up.
    const d = dueFires(r, at('2026-10-24T23:00:00Z'), at('2026-10-25T02:00:00Z'), { windowMs: 86_400_000, onTimeMs: 2000 }, 100);
    expect(iso(d.due)).toEqual(expected.filter((t) => t <= '2026-10-25T02:00:00.000Z'));
  });

  it('an every-30-minutes cron is an interval: it keeps firing through the repeated hour', () => {
    const r = resolveRule({ cron: '*/30 * * * *', timezone: 'Europe/Berlin' });
    expect(fireTimesAfter(r, at('2026-10-24T23:59:00Z'), 6)).toHaveLength(6);
    expect(iso(fireTimesAfter(r, at('2026-10-25T00:59:00Z'), 2))).toEqual(['2026-10-25T01:00:00.000Z', '2026-10-25T01:30:00.000Z']);
  });

  // #32 item 13: after a long outage only the first 10,000 fire times were looked at, so a fire 73 h old was started as 'started'.
  it('catch-up after 10 days down takes the newest fires within the window', () => {
    const r = resolveRule({ cron: '* * * * *' });
    const now = at('2026-01-11T00:00:30Z');
    const d = dueFires(r, at('2026-01-01T00:00:00Z'), now, { windowMs: 10 * 86_400_000, onTimeMs: 2000 }, 100);
    expect(d.due).toHaveLength(100);
    expect(d.due.at(-1)!.toISOString()).toBe('2026-01-11T00:00:00.000Z'); // the newest, started on time
    expect(d.due[0].toISOString()).toBe('2026-01-10T22:21:00.000Z');
    expect(d.lastMissed?.toISOString()).toBe('2026-01-10T22:20:00.000Z');
    expect(d.missed).toBe(1000); // counted up to the bound (14,301 fell due)
  });

  // #32 item 11: with a window shorter than a pass interval every on-time fire was recorded missed.
  it('a fire reached within one pass interval of its time is on time, whatever the window', () => {
    const r = resolveRule({ cron: '0 3 * * *' });
    const onTime = dueFires(r, at('2026-01-01T03:00:00Z'), at('2026-01-01T03:00:01.700Z'), { windowMs: 1000, onTimeMs: 2000 }, 100);
    expect(onTime).toEqual({ due: [at('2026-01-01T03:00:00Z')], missed: 0, lastMissed: null });
    const late = dueFires(r, at('2026-01-01T03:00:00Z'), at('2026-01-01T03:00:05Z'), { windowMs: 1000, onTimeMs: 2000 }, 100);
    expect(late).toEqual({ due: [], missed: 1, lastMissed: at('2026-01-01T03:00:00Z') });
  });

  it('@daily-style nicknames and 6-field crons (seconds) still parse', () => {
    expect(iso(fireTimesAfter(resolveRule({ cron: '@daily' }), at('2026-01-01T10:00:00Z'), 1))).toEqual(['2026-01-02T00:00:00.000Z']);
    expect(iso(fireTimesAfter(resolveRule({ cron: '*/10 * * * * *' }), at('2026-01-01T10:00:00Z'), 1))).toEqual([
      '2026-01-01T10:00:10.000Z',
    ]);
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
    // #32 item 11: a window no pass could ever be inside.
    [{ id: 's', workflowType: 'w', every: '1s', catchupWindow: 0 }, /catchupWindow: must be at least 1000ms \(got 0ms\)/],
    [{ id: 's', workflowType: 'w', every: '1s', catchupWindow: '500ms' }, /catchupWindow: must be at least 1000ms/],
    // #32 item 16: crons that can never fire, and 7 fields (a year: it would stop firing for good).
    [{ id: 's', workflowType: 'w', cron: '0 0 30 2 *' }, /"0 0 30 2 \*" can never fire/],
    [{ id: 's', workflowType: 'w', cron: '0 0 0 31 4 *' }, /can never fire/],
    [{ id: 's', workflowType: 'w', cron: '0 0 0 1 1 * 2030' }, /not a valid cron expression.*5 or 6/],
    // #32 item 14: misspelt options are refused, not ignored.
    [{ id: 's', workflowType: 'w', cron: '0 3 * * *', timeZone: 'Asia/Tokyo' }, /unknown option "timeZone"/],
    [{ id: 's', workflowType: 'w', every: '1s', overLap: 'skip' }, /unknown option "overLap"/],
    [{ id: 's', workflowType: 'w', every: '1s', catchupwindow: '1m' }, /unknown option "catchupwindow"/],
    [{ id: 's', workflowType: 'w', evry: '1s' }, /unknown option "evry"/],
    // #32 item 15: an id whose fire ids are not valid workflow ids.
    [{ id: 'bad\u0007id', workflowType: 'w', every: '1s' }, /schedule id: its fires' workflow ids would be invalid/],
  ])('refuses %j', (o, message) => {
    expect(() => resolveSchedule(o as never)).toThrow(message);
    expect(() => resolveSchedule(o as never)).toThrow(expect.objectContaining({ code: expect.stringMatching(/^WEFT_INVALID_/) }));
  });
});
