/**
 * Amounts are integer cents (SPEC §2): shown as dollars and cents by string arithmetic on the integer's
 * digits, never by dividing a float. Times show in the viewer's zone with their Eastern settlement window.
 */
export function formatCents(cents: number): string {
  if (!Number.isSafeInteger(cents)) return `${String(cents)} cents`;
  const negative = cents < 0;
  const digits = String(negative ? -cents : cents).padStart(3, '0');
  const whole = digits.slice(0, -2).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}$${whole}.${digits.slice(-2)}`;
}

const viewerTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});

const eastern = new Intl.DateTimeFormat('en-US', {
  timeZone: 'America/New_York',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
});

export function formatTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : viewerTime.format(date);
}

/** YYYY-MM-DD plus `days` (negative: back), on the calendar, not on the clock. */
export function addDays(date: string, days: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}

/**
 * The Eastern settlement window (SPEC §8) of a moment: its America/New_York calendar day, or the next day
 * once the wall clock has reached a cutoff other than 00:00.
 */
export function windowDateOf(iso: string, cutoff: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const part = (type: string) => eastern.formatToParts(date).find((p) => p.type === type)?.value ?? '00';
  const day = `${part('year')}-${part('month')}-${part('day')}`;
  if (cutoff === '00:00') return day;
  return `${part('hour')}:${part('minute')}` >= cutoff ? addDays(day, 1) : day;
}

export function label(value: string): string {
  return value.replace(/_/g, ' ');
}
