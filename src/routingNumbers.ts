/**
 * ABA routing numbers (NACHA Operating Rules, Appendix Three): 8 digits naming the bank and a check digit
 * that makes 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) a multiple of 10. A typo in a routing number is caught
 * here, before a file the bank would reject entry by entry.
 */
const WEIGHTS = [3, 7, 1, 3, 7, 1, 3, 7] as const;

/** The check digit (0–9) of an 8-digit DFI identification. */
export function routingCheckDigit(dfi8: string): number {
  if (!/^\d{8}$/.test(dfi8)) throw new Error(`a DFI identification is 8 digits, got "${dfi8}"`);
  let sum = 0;
  for (let i = 0; i < 8; i += 1) sum += WEIGHTS[i]! * (dfi8.charCodeAt(i) - 48);
  return (10 - (sum % 10)) % 10;
}

export function isRoutingNumber(routing: string): boolean {
  return /^\d{9}$/.test(routing) && routingCheckDigit(routing.slice(0, 8)) === routing.charCodeAt(8) - 48;
}
