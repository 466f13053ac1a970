// A payment's two directions (SPEC §5): shared below the features, since the ledger and the limits both
// speak of them. Pure: the ledger's workflow contract re-exports them to workflow code.
export const DIRECTIONS = ['cash_in', 'cash_out'] as const;
export type Direction = (typeof DIRECTIONS)[number];
