/**
 * What a NACHA file is made of (NACHA Operating Rules, Appendix Two: the ACH record formats), shared by the
 * builder (build.ts) and the parser (parse.ts). Every record is 94 ASCII characters; records are blocked by
 * 10, the last block filled with records of nines.
 */
export const RECORD_LENGTH = 94;
export const BLOCKING_FACTOR = 10;
export const FILLER_RECORD = '9'.repeat(RECORD_LENGTH);

/**
 * The counts and sums a file's fixed-width fields can carry. A file past one of them cannot be written
 * truthfully, so the builder refuses it instead of letting a total wrap.
 */
export const NACHA_LIMITS = {
  /** Amount field: 10 digits of cents. */
  entryAmountCentsMax: 9_999_999_999,
  /** Batch and file total debit/credit fields: 12 digits of cents. */
  totalCentsMax: 999_999_999_999,
  /** Batch control's entry/addenda count: 6 digits. */
  entriesPerBatchMax: 999_999,
  /** File control's batch count: 6 digits. */
  batchesPerFileMax: 999_999,
  /**
   * One window's file. The file control's block count (6 digits) allows ~10 million records; a million
   * entries is far above a day's volume and keeps one file's build under a few seconds and ~100 MB.
   */
  entriesPerFileMax: 1_000_000,
  /** The trace number's sequence part: 7 digits. */
  traceSequenceMax: 9_999_999,
} as const;

/** Transaction codes this service originates: live credits and debits, checking (2x) and savings (3x). */
export const TRANSACTION_CODES = { checkingCredit: 22, checkingDebit: 27, savingsCredit: 32, savingsDebit: 37 } as const;
export type TransactionCode = (typeof TRANSACTION_CODES)[keyof typeof TRANSACTION_CODES];

/** A debit pulls money from the receiver; codes 25–29 and 35–39 (and 45–49, 55–56) are debits. */
export function isDebitCode(transactionCode: number): boolean {
  const unit = transactionCode % 10;
  return unit >= 5 && unit <= 9;
}

/** Service class codes: mixed, credits only, debits only. */
export const SERVICE_CLASS_CODES = [200, 220, 225] as const;
export type ServiceClassCode = (typeof SERVICE_CLASS_CODES)[number];

export const SEC_CODES = ['PPD', 'CCD'] as const;
export type SecCode = (typeof SEC_CODES)[number];

/** File id modifiers in the order a day's files take them: A–Z, then 0–9 (36 files per file date). */
export const FILE_ID_MODIFIERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** The modifier of a file date's n-th file (0-based); there is none past the 36th. */
export function fileIdModifierOf(fileIndexOfDay: number): string {
  const modifier = FILE_ID_MODIFIERS[fileIndexOfDay];
  if (!Number.isInteger(fileIndexOfDay) || modifier === undefined) {
    throw new Error(`a file date has ${FILE_ID_MODIFIERS.length} file id modifiers (A–Z, 0–9); file #${fileIndexOfDay + 1} has none`);
  }
  return modifier;
}

/**
 * An entry hash is the sum of the entries' 8-digit RDFI identifications, keeping its rightmost 10 digits
 * (a sum of a million 8-digit numbers stays far below 2^53, so plain numbers are exact).
 */
export const ENTRY_HASH_MODULUS = 10_000_000_000;

/** `2026-11-27` → `261127`, the files' YYMMDD. */
export function yymmdd(isoDate: string): string {
  return isoDate.slice(2, 4) + isoDate.slice(5, 7) + isoDate.slice(8, 10);
}

/** `261127` → `2026-11-27` (NACHA dates are of this century). */
export function isoDateOf(yymmddText: string): string {
  return `20${yymmddText.slice(0, 2)}-${yymmddText.slice(2, 4)}-${yymmddText.slice(4, 6)}`;
}
