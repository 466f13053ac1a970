/**
 * The names of the settlement calendars (SPEC §15), below both the configuration that chooses one and the
 * calendar code that computes it (src/settlement/calendar.ts). Dependency-free, as workflow code imports it.
 */
export const SETTLEMENT_CALENDARS = ['federal_reserve', 'every_day'] as const;
export type SettlementCalendar = (typeof SETTLEMENT_CALENDARS)[number];
