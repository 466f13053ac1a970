import { DateTime } from 'luxon';
import { isRoutingNumber } from '../routingNumbers';
import { SETTLEMENT_ZONE } from '../easternDates';

/**
 * Checks on card and bank numbers. Pure functions: the full numbers pass through here and go nowhere
 * else; callers keep only what maskCard / maskBankAccount return.
 */

/** Luhn (mod 10) check digit, as every card network uses. */
export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/**
 * ABA routing number: nine digits with their check digit (src/ach/routing.ts, the one implementation), and a
 * first two digits the Federal Reserve assigns (01–12 banks, 21–32 thrifts, 61–72 electronic, 80 traveler's checks).
 */
export function abaValid(routing: string): boolean {
  if (!isRoutingNumber(routing)) return false;
  const prefix = Number(routing.slice(0, 2));
  return (prefix >= 0 && prefix <= 12) || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) || prefix === 80;
}

export type CardBrand = 'visa' | 'mastercard' | 'amex' | 'discover' | 'diners' | 'jcb' | 'unionpay' | 'unknown';

/** The brand by its issuer identification number (the leading digits). */
export function cardBrand(number: string): CardBrand {
  const n = (k: number) => Number(number.slice(0, k));
  if (/^3[47]/.test(number)) return 'amex';
  if (/^4/.test(number)) return 'visa';
  if ((n(2) >= 51 && n(2) <= 55) || (n(4) >= 2221 && n(4) <= 2720)) return 'mastercard';
  if (/^6011/.test(number) || /^65/.test(number) || (n(3) >= 644 && n(3) <= 649)) return 'discover';
  if (n(4) >= 3528 && n(4) <= 3589) return 'jcb';
  if ((n(3) >= 300 && n(3) <= 305) || /^3[689]/.test(number)) return 'diners';
  if (/^62/.test(number)) return 'unionpay';
  return 'unknown';
}

/** The security code's length for the brand: four digits on the front of an Amex, three elsewhere. */
export function cvcLength(brand: CardBrand): number {
  return brand === 'amex' ? 4 : 3;
}

/**
 * A card is good through the last moment of its expiry month. Months are Eastern-time months
 * (America/New_York), the zone every settlement window of this service uses.
 */
export function cardExpired(expMonth: number, expYear: number, now: Date): boolean {
  const endOfMonth = DateTime.fromObject({ year: expYear, month: expMonth, day: 1 }, { zone: SETTLEMENT_ZONE }).plus({ months: 1 });
  return DateTime.fromJSDate(now) >= endOfMonth;
}

/**
 * A few routing numbers whose bank is well known, to name the bank in masked bank accounts; any other
 * valid routing number gets `bank: null` (a production deployment would use the Fed's E-Payments directory).
 */
const BANKS: Record<string, string> = {
  '011000015': 'Federal Reserve Bank of Boston',
  '011000138': 'Bank of America',
  '026009593': 'Bank of America',
  '111000025': 'Bank of America',
  '021000021': 'JPMorgan Chase Bank',
  '322271627': 'JPMorgan Chase Bank',
  '021000089': 'Citibank',
  '121000248': 'Wells Fargo Bank',
  '110000000': 'Sandbox Test Bank',
};

export function bankName(routing: string): string | null {
  return BANKS[routing] ?? null;
}

export interface MaskedCard {
  brand: CardBrand;
  last4: string;
  exp_month: number;
  exp_year: number;
}

export interface MaskedBankAccount {
  bank: string | null;
  last4: string;
}

export function maskCard(card: { number: string; exp_month: number; exp_year: number }): MaskedCard {
  return { brand: cardBrand(card.number), last4: card.number.slice(-4), exp_month: card.exp_month, exp_year: card.exp_year };
}

export function maskBankAccount(account: { routing_number: string; account_number: string }): MaskedBankAccount {
  return { bank: bankName(account.routing_number), last4: account.account_number.slice(-4) };
}
