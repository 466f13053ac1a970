import fc from 'fast-check';
import { settlementDateOf, windowBounds } from '../src/easternDates';

// 2026 DST in America/New_York: spring forward Sunday 8 March (23-hour day), fall back Sunday 1 November
// (25-hour day).
const at = (iso: string) => new Date(iso);

describe('SPEC §8 transaction date: the Eastern-time settlement window', () => {
  test('with the default cutoff 00:00 the date is the Eastern calendar day, at the 23:59:59 / 00:00:00 boundary', () => {
    expect(settlementDateOf(at('2026-01-15T04:59:59Z'), '00:00')).toBe('2026-01-14'); // 23:59:59 EST
    expect(settlementDateOf(at('2026-01-15T05:00:00Z'), '00:00')).toBe('2026-01-15'); // 00:00:00 EST
    expect(settlementDateOf(at('2026-07-15T03:59:59Z'), '00:00')).toBe('2026-07-14'); // 23:59:59 EDT
    expect(settlementDateOf(at('2026-07-15T04:00:00Z'), '00:00')).toBe('2026-07-15'); // 00:00:00 EDT
  });

  test('a cutoff shifts the window: with 17:00, 18:00 on the 5th belongs to the 6th and 16:59:59 to the 5th', () => {
    expect(settlementDateOf(at('2026-01-05T23:00:00Z'), '17:00')).toBe('2026-01-06'); // 18:00 EST
    expect(settlementDateOf(at('2026-01-05T21:59:59Z'), '17:00')).toBe('2026-01-05'); // 16:59:59 EST
    expect(settlementDateOf(at('2026-01-05T22:00:00Z'), '17:00')).toBe('2026-01-06'); // 17:00:00 EST opens the next window
  });

  test('the 23-hour spring-forward day (2026-03-08) is one window of exactly 23 hours', () => {
    const { start, end } = windowBounds('2026-03-08', '00:00');
    expect(start.toISOString()).toBe('2026-03-08T05:00:00.000Z');
    expect(end.toISOString()).toBe('2026-03-09T04:00:00.000Z');
    expect(end.getTime() - start.getTime()).toBe(23 * 3600_000);
    expect(settlementDateOf(at('2026-03-08T06:59:59Z'), '00:00')).toBe('2026-03-08'); // 01:59:59 EST
    expect(settlementDateOf(at('2026-03-08T07:00:00Z'), '00:00')).toBe('2026-03-08'); // 03:00:00 EDT
    expect(settlementDateOf(at('2026-03-09T03:59:59Z'), '00:00')).toBe('2026-03-08'); // 23:59:59 EDT
    expect(settlementDateOf(at('2026-03-09T04:00:00Z'), '00:00')).toBe('2026-03-09');
  });

  test('the 25-hour fall-back day (2026-11-01) is one window of exactly 25 hours, both 01:30s included', () => {
    const { start, end } = windowBounds('2026-11-01', '00:00');
    expect(start.toISOString()).toBe('2026-11-01T04:00:00.000Z');
    expect(end.toISOString()).toBe('2026-11-02T05:00:00.000Z');
    expect(end.getTime() - start.getTime()).toBe(25 * 3600_000);
    expect(settlementDateOf(at('2026-11-01T05:30:00Z'), '00:00')).toBe('2026-11-01'); // 01:30 EDT
    expect(settlementDateOf(at('2026-11-01T06:30:00Z'), '00:00')).toBe('2026-11-01'); // 01:30 EST
    expect(settlementDateOf(at('2026-11-02T04:59:59Z'), '00:00')).toBe('2026-11-01'); // 23:59:59 EST
  });

  test('with a 17:00 cutoff the windows spanning the DST changes are 23 and 25 hours and never overlap', () => {
    const spring = windowBounds('2026-03-09', '17:00');
    expect(spring.start.toISOString()).toBe('2026-03-08T21:00:00.000Z'); // 17:00 EDT on the 8th
    expect(spring.end.toISOString()).toBe('2026-03-09T21:00:00.000Z');
    expect(spring.end.getTime() - spring.start.getTime()).toBe(24 * 3600_000);
    const springBefore = windowBounds('2026-03-08', '17:00');
    expect(springBefore.start.toISOString()).toBe('2026-03-07T22:00:00.000Z'); // 17:00 EST on the 7th
    expect(springBefore.end.getTime() - springBefore.start.getTime()).toBe(23 * 3600_000);
    expect(springBefore.end.getTime()).toBe(spring.start.getTime());
    const fall = windowBounds('2026-11-01', '17:00');
    expect(fall.end.getTime() - fall.start.getTime()).toBe(25 * 3600_000);
  });

  test('every moment of a window maps back to that window, for every day of 2026 (both DST days included)', () => {
    for (const cutoff of ['00:00', '17:00', '02:30']) {
      let day = new Date('2026-01-01T12:00:00Z');
      for (let i = 0; i < 365; i += 1) {
        const date = day.toISOString().slice(0, 10);
        const { start, end } = windowBounds(date, cutoff);
        expect(settlementDateOf(start, cutoff)).toBe(date);
        expect(settlementDateOf(new Date(end.getTime() - 1), cutoff)).toBe(date);
        expect(settlementDateOf(end, cutoff)).not.toBe(date);
        day = new Date(day.getTime() + 86_400_000);
      }
    }
  });

  // settlementDateOf remembers the last window it answered and answers from its bounds: moments close together
  // (hours apart, across window edges and DST days), in any order and with the cutoff changing between them.
  test('every moment is inside the bounds of the window it is given, whatever was asked before', () => {
    const moment = fc.date({ min: at('2025-01-01T00:00:00Z'), max: at('2028-12-31T00:00:00Z'), noInvalidDate: true });
    const cutoff = fc.constantFrom('00:00', '17:00', '02:30', '23:59');
    const hours = fc.integer({ min: -40 * 3_600_000, max: 40 * 3_600_000 });
    fc.assert(
      fc.property(moment, fc.array(fc.tuple(hours, cutoff), { minLength: 1, maxLength: 40 }), (base, asks) => {
        for (const [offsetMs, each] of asks) {
          const when = new Date(base.getTime() + offsetMs);
          const { start, end } = windowBounds(settlementDateOf(when, each), each);
          expect(start.getTime() <= when.getTime() && when.getTime() < end.getTime()).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});
