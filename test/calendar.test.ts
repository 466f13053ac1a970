import {
  addDays,
  businessDaysBetween,
  CalendarDateError,
  federalReserveHolidays,
  holidayOn,
  holidaysBetween,
  isBusinessDay,
  nextBusinessDayOnOrAfter,
} from '../src/settlement/calendar';
import { ConfigError, loadConfig } from '../src/config';
import { transferDateOf, windowCloseDateOf } from '../src/settlement/dates';

/**
 * The Federal Reserve's published holiday schedule for 2026–2030, typed from the Fed's table. `*` in the
 * Fed's table: a Saturday holiday, open the Friday before (listed here on the Saturday, closing no weekday);
 * `**`: a Sunday holiday, closed the Monday after (listed on that Monday).
 */
const PUBLISHED: Record<number, string[]> = {
  2026: [
    '2026-01-01',
    '2026-01-19',
    '2026-02-16',
    '2026-05-25',
    '2026-06-19',
    '2026-07-04*',
    '2026-09-07',
    '2026-10-12',
    '2026-11-11',
    '2026-11-26',
    '2026-12-25',
  ],
  2027: [
    '2027-01-01',
    '2027-01-18',
    '2027-02-15',
    '2027-05-31',
    '2027-06-19*',
    '2027-07-05**',
    '2027-09-06',
    '2027-10-11',
    '2027-11-11',
    '2027-11-25',
    '2027-12-25*',
  ],
  2028: [
    '2028-01-01*',
    '2028-01-17',
    '2028-02-21',
    '2028-05-29',
    '2028-06-19',
    '2028-07-04',
    '2028-09-04',
    '2028-10-09',
    '2028-11-11*',
    '2028-11-23',
    '2028-12-25',
  ],
  2029: [
    '2029-01-01',
    '2029-01-15',
    '2029-02-19',
    '2029-05-28',
    '2029-06-19',
    '2029-07-04',
    '2029-09-03',
    '2029-10-08',
    '2029-11-12**',
    '2029-11-22',
    '2029-12-25',
  ],
  2030: [
    '2030-01-01',
    '2030-01-21',
    '2030-02-18',
    '2030-05-27',
    '2030-06-19',
    '2030-07-04',
    '2030-09-02',
    '2030-10-14',
    '2030-11-11',
    '2030-11-28',
    '2030-12-25',
  ],
};

const NAMES = [
  "New Year's Day",
  'Martin Luther King Jr. Day',
  "Washington's Birthday",
  'Memorial Day',
  'Juneteenth National Independence Day',
  'Independence Day',
  'Labor Day',
  'Columbus Day',
  'Veterans Day',
  'Thanksgiving Day',
  'Christmas Day',
];

describe('SPEC §15 Federal Reserve calendar', () => {
  test.each(Object.keys(PUBLISHED).map(Number))('%i: the holidays computed from the rules are the published ones', (year) => {
    const published = PUBLISHED[year]!;
    const computed = federalReserveHolidays(year);
    expect(computed.map((holiday) => holiday.date)).toEqual(published.map((entry) => entry.replace(/\*+$/, '')));
    expect(computed.map((holiday) => holiday.name.replace(/ \(observed\)$/, ''))).toEqual(NAMES);
    for (const [index, entry] of published.entries()) {
      const date = entry.replace(/\*+$/, '');
      expect(computed[index]!.name.endsWith('(observed)')).toBe(entry.endsWith('**'));
      // A Saturday holiday closes no weekday; every other one is a weekday the Fed is closed.
      expect(isBusinessDay(date)).toBe(false);
      if (entry.endsWith('*') && !entry.endsWith('**')) {
        expect(new Date(`${date}T12:00:00Z`).getUTCDay()).toBe(6);
        expect(isBusinessDay(addDays(date, -1))).toBe(true);
      }
    }
  });

  test('business days are the weekdays that are not holidays: 2026 has 251, 2027 has 252', () => {
    expect(businessDaysBetween('2026-01-01', '2026-12-31')).toHaveLength(365 - 104 - 10); // Jul 4 is a Saturday
    expect(businessDaysBetween('2027-01-01', '2027-12-31')).toHaveLength(365 - 104 - 9); // Jun 19 and Dec 25 are Saturdays; Jul 4 a Sunday → Jul 5
    expect(businessDaysBetween('2026-11-20', '2026-11-30')).toEqual([
      '2026-11-20',
      '2026-11-23',
      '2026-11-24',
      '2026-11-25',
      '2026-11-27',
      '2026-11-30',
    ]);
    expect(isBusinessDay('2026-07-03')).toBe(true); // Friday before a Saturday Independence Day: open
    expect(isBusinessDay('2027-12-24')).toBe(true);
    expect(isBusinessDay('2027-12-31')).toBe(true); // Friday before a Saturday New Year's Day 2028: open
    expect(isBusinessDay('2026-11-21')).toBe(false); // Saturday
    expect(isBusinessDay('2026-11-22')).toBe(false); // Sunday
    expect(holidayOn('2027-07-04')).toBeNull(); // the Sunday itself is a weekend day, the Monday carries the holiday
    expect(holidayOn('2027-07-05')).toBe('Independence Day (observed)');
  });

  test('the next business day on or after a date skips weekends and holidays', () => {
    expect(nextBusinessDayOnOrAfter('2026-11-25')).toBe('2026-11-25');
    expect(nextBusinessDayOnOrAfter('2026-11-26')).toBe('2026-11-27'); // Thanksgiving → Friday
    expect(nextBusinessDayOnOrAfter('2026-11-14')).toBe('2026-11-16'); // Saturday → Monday
    expect(nextBusinessDayOnOrAfter('2026-09-05')).toBe('2026-09-08'); // Saturday, Sunday, Labor Day → Tuesday
    expect(nextBusinessDayOnOrAfter('2027-07-03')).toBe('2027-07-06'); // Saturday, Sunday Jul 4, observed Monday → Tuesday
    expect(nextBusinessDayOnOrAfter('2026-12-25')).toBe('2026-12-28'); // Christmas Friday → Monday
    expect(nextBusinessDayOnOrAfter('2027-12-31')).toBe('2027-12-31');
    expect(nextBusinessDayOnOrAfter('2028-01-01')).toBe('2028-01-03'); // Saturday New Year's Day → Monday
    expect(nextBusinessDayOnOrAfter('2026-11-14', 'every_day')).toBe('2026-11-14');
  });

  test('holidaysBetween lists each holiday in the range on the day the Fed is closed for it; every_day has none', () => {
    expect(holidaysBetween('2027-06-01', '2027-07-31')).toEqual([
      { date: '2027-06-19', name: 'Juneteenth National Independence Day' },
      { date: '2027-07-05', name: 'Independence Day (observed)' },
    ]);
    expect(holidaysBetween('2027-12-20', '2028-01-20').map((h) => h.date)).toEqual(['2027-12-25', '2028-01-01', '2028-01-17']);
    expect(holidaysBetween('2026-01-01', '2026-12-31', 'every_day')).toEqual([]);
    expect(businessDaysBetween('2026-11-21', '2026-11-22', 'every_day')).toEqual(['2026-11-21', '2026-11-22']);
    expect(holidaysBetween('2020-06-01', '2020-06-30')).toEqual([]); // Juneteenth became a holiday in 2021
  });

  test('bad dates and ranges are refused, never guessed', () => {
    for (const bad of ['2026-02-30', '2026-13-01', '26-01-01', '2026-1-1', '', 'tomorrow']) {
      expect(() => isBusinessDay(bad)).toThrow(CalendarDateError);
    }
    expect(() => holidaysBetween('2026-02-01', '2026-01-01')).toThrow(/before/);
    expect(() => businessDaysBetween('2000-01-01', '2030-12-31')).toThrow(/at most/);
  });

  test("a window's transfer is dated the first business day on or after the day the window closes", () => {
    // Cutoff 00:00: window D closes at midnight opening D+1.
    expect(windowCloseDateOf('2026-11-12', '00:00')).toBe('2026-11-13');
    expect(transferDateOf('2026-11-12', '00:00')).toBe('2026-11-13'); // closes Friday: Friday
    expect(transferDateOf('2026-11-13', '00:00')).toBe('2026-11-16'); // closes Saturday: Monday
    expect(transferDateOf('2026-11-14', '00:00')).toBe('2026-11-16'); // closes Sunday: Monday
    expect(transferDateOf('2026-11-25', '00:00')).toBe('2026-11-27'); // closes on Thanksgiving: Friday
    expect(transferDateOf('2026-11-13', '00:00', 'every_day')).toBe('2026-11-14');
    // A daytime cutoff closes window D on D itself.
    expect(windowCloseDateOf('2026-11-13', '17:00')).toBe('2026-11-13');
    expect(transferDateOf('2026-11-13', '17:00')).toBe('2026-11-13');
    expect(transferDateOf('2026-11-14', '17:00')).toBe('2026-11-16');
    expect(transferDateOf('2026-03-08', '17:00')).toBe('2026-03-09');
  });

  test('SETTLEMENT_CALENDAR is validated at start: federal_reserve by default, every_day, anything else stops the process naming it', () => {
    expect(loadConfig({}).SETTLEMENT_CALENDAR).toBe('federal_reserve');
    expect(loadConfig({ SETTLEMENT_CALENDAR: 'every_day' }).SETTLEMENT_CALENDAR).toBe('every_day');
    expect(() => loadConfig({ SETTLEMENT_CALENDAR: 'ecb' })).toThrow(ConfigError);
    expect(() => loadConfig({ SETTLEMENT_CALENDAR: 'ecb' })).toThrow(/SETTLEMENT_CALENDAR="ecb"/);
  });
});
