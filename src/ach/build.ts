import {
  BLOCKING_FACTOR,
  ENTRY_HASH_MODULUS,
  FILE_ID_MODIFIERS,
  FILLER_RECORD,
  NACHA_LIMITS,
  SEC_CODES,
  SERVICE_CLASS_CODES,
  TRANSACTION_CODES,
  isDebitCode,
  yymmdd,
  type SecCode,
  type ServiceClassCode,
  type TransactionCode,
} from './nacha';
import { isRoutingNumber } from './routing';

/**
 * Builds a NACHA file from rows (SPEC §24): file header, one batch per (organization, SEC code, effective
 * date), entry detail records, batch and file controls with exact counts, entry hash and totals, blocked by
 * 10. Written from the Operating Rules' record layouts rather than an npm package (docs/ach.md, "Files");
 * moov-io/ach reads every file back in test/ach.files.test.ts.
 */

export interface NachaFileInput {
  /** The ODFI's routing number (ACH_ODFI_ROUTING): the immediate destination and the trace numbers' prefix. */
  odfiRouting: string;
  /** ACH_IMMEDIATE_ORIGIN: exactly 10 characters, as the bank assigned it (often a space or 1 and a tax id). */
  immediateOrigin: string;
  /** ACH_ODFI_NAME, up to 23 characters. */
  immediateDestinationName: string;
  /** ACH_ORIGIN_NAME, up to 23 characters. */
  immediateOriginName: string;
  /** The file's creation date (YYYY-MM-DD) and time (HH:MM), Eastern as the bank reads them. */
  creationDate: string;
  creationTime: string;
  /** A–Z then 0–9 per file date (fileIdModifierOf). */
  fileIdModifier: string;
  referenceCode?: string;
  batches: readonly NachaBatchInput[];
}

export interface NachaBatchInput {
  serviceClassCode: ServiceClassCode;
  secCode: SecCode;
  /** The organization's company name (16) and company identification (10). */
  companyName: string;
  companyIdentification: string;
  /** What the receiver's statement shows beside the company name, e.g. `PAYMENT` (10). */
  companyEntryDescription: string;
  companyDiscretionaryData?: string;
  companyDescriptiveDate?: string;
  /** YYYY-MM-DD. */
  effectiveEntryDate: string;
  entries: readonly NachaEntryInput[];
}

export interface NachaEntryInput {
  transactionCode: TransactionCode;
  /** The receiver's bank: 9 digits including the check digit. */
  rdfiRouting: string;
  /** 1–17 characters. */
  accountNumber: string;
  amountCents: number;
  /** Up to 15 characters (the user's or transfer's id as the receiver's bank shows it). */
  individualIdentification: string;
  /** Up to 22 characters; the receiving company's name for CCD. */
  individualName: string;
  discretionaryData?: string;
  /** The 7-digit sequence of the trace number, after the ODFI's 8 digits; unique in the file. */
  traceSequence: number;
}

export interface NachaFileSummary {
  batchCount: number;
  blockCount: number;
  entryAddendaCount: number;
  entryHash: number;
  totalDebitCents: number;
  totalCreditCents: number;
}

export interface NachaFile {
  /** The file's bytes: ASCII, one record per line, lines ended by `\n`. */
  text: string;
  summary: NachaFileSummary;
}

/** A row that cannot be written into a file, naming the field (`batches[1].entries[7].rdfiRouting`). */
export class NachaInputError extends Error {
  override name = 'NachaInputError';
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

const TEXT = /^[\x20-\x7e]*$/;
const ISO_DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;
const ENTRY_CODES: ReadonlySet<number> = new Set(Object.values(TRANSACTION_CODES));

function alpha(value: string, width: number, field: () => string, required = false): string {
  if (value.length > width) throw new NachaInputError(field(), `at most ${width} characters, got ${value.length}`);
  if (!TEXT.test(value)) throw new NachaInputError(field(), 'printable ASCII only (NACHA fields are ASCII)');
  if (required && value.trim() === '') throw new NachaInputError(field(), 'required, got blanks');
  return value.length === width ? value : value + ' '.repeat(width - value.length);
}

function numeric(value: number, width: number): string {
  const text = String(value);
  return text.length === width ? text : '0'.repeat(width - text.length) + text;
}

function isoDate(value: string, field: () => string): string {
  if (!ISO_DATE.test(value)) throw new NachaInputError(field(), `a date YYYY-MM-DD, got "${value}"`);
  return yymmdd(value);
}

function fileHeader(input: NachaFileInput): string {
  if (!isRoutingNumber(input.odfiRouting)) {
    throw new NachaInputError('odfiRouting', `a 9-digit routing number with its check digit, got "${input.odfiRouting}"`);
  }
  if (input.immediateOrigin.length !== 10) {
    throw new NachaInputError('immediateOrigin', `exactly 10 characters, got ${input.immediateOrigin.length}`);
  }
  if (input.fileIdModifier.length !== 1 || !FILE_ID_MODIFIERS.includes(input.fileIdModifier)) {
    throw new NachaInputError('fileIdModifier', `one of A–Z, 0–9, got "${input.fileIdModifier}"`);
  }
  if (!TIME.test(input.creationTime)) throw new NachaInputError('creationTime', `HH:MM, got "${input.creationTime}"`);
  return (
    '101 ' +
    input.odfiRouting +
    alpha(input.immediateOrigin, 10, () => 'immediateOrigin', true) +
    isoDate(input.creationDate, () => 'creationDate') +
    input.creationTime.slice(0, 2) +
    input.creationTime.slice(3, 5) +
    input.fileIdModifier +
    '094101' +
    alpha(input.immediateDestinationName, 23, () => 'immediateDestinationName', true) +
    alpha(input.immediateOriginName, 23, () => 'immediateOriginName', true) +
    alpha(input.referenceCode ?? '', 8, () => 'referenceCode')
  );
}

interface BatchTotals {
  entryCount: number;
  entryHash: number;
  debitCents: number;
  creditCents: number;
}

function batchHeader(batch: NachaBatchInput, odfi8: string, batchNumber: string, at: string): string {
  if (!SERVICE_CLASS_CODES.includes(batch.serviceClassCode)) {
    throw new NachaInputError(`${at}.serviceClassCode`, `one of ${SERVICE_CLASS_CODES.join(', ')}, got ${batch.serviceClassCode}`);
  }
  if (!SEC_CODES.includes(batch.secCode)) {
    throw new NachaInputError(`${at}.secCode`, `one of ${SEC_CODES.join(', ')}, got "${batch.secCode}"`);
  }
  return (
    '5' +
    String(batch.serviceClassCode) +
    alpha(batch.companyName, 16, () => `${at}.companyName`, true) +
    alpha(batch.companyDiscretionaryData ?? '', 20, () => `${at}.companyDiscretionaryData`) +
    alpha(batch.companyIdentification, 10, () => `${at}.companyIdentification`, true) +
    batch.secCode +
    alpha(batch.companyEntryDescription, 10, () => `${at}.companyEntryDescription`, true) +
    alpha(batch.companyDescriptiveDate ?? '', 6, () => `${at}.companyDescriptiveDate`) +
    isoDate(batch.effectiveEntryDate, () => `${at}.effectiveEntryDate`) +
    // Settlement date (Julian): blank, the ACH operator fills it in.
    '   ' +
    '1' +
    odfi8 +
    batchNumber
  );
}

function checkEntry(entry: NachaEntryInput, serviceClassCode: ServiceClassCode, at: () => string): void {
  if (!ENTRY_CODES.has(entry.transactionCode)) {
    throw new NachaInputError(`${at()}.transactionCode`, `one of 22, 27, 32, 37, got ${entry.transactionCode}`);
  }
  const debit = isDebitCode(entry.transactionCode);
  if ((serviceClassCode === 220 && debit) || (serviceClassCode === 225 && !debit)) {
    throw new NachaInputError(
      `${at()}.transactionCode`,
      `${entry.transactionCode} does not belong in a service class ${serviceClassCode} batch`,
    );
  }
  if (!isRoutingNumber(entry.rdfiRouting)) {
    throw new NachaInputError(`${at()}.rdfiRouting`, `a 9-digit routing number with its check digit, got "${entry.rdfiRouting}"`);
  }
  const amount = entry.amountCents;
  if (!Number.isInteger(amount) || amount < 1 || amount > NACHA_LIMITS.entryAmountCentsMax) {
    throw new NachaInputError(`${at()}.amountCents`, `an integer from 1 to ${NACHA_LIMITS.entryAmountCentsMax}, got ${amount}`);
  }
  const sequence = entry.traceSequence;
  if (!Number.isInteger(sequence) || sequence < 0 || sequence > NACHA_LIMITS.traceSequenceMax) {
    throw new NachaInputError(`${at()}.traceSequence`, `an integer from 0 to ${NACHA_LIMITS.traceSequenceMax}, got ${sequence}`);
  }
}

function entryRecord(entry: NachaEntryInput, serviceClassCode: ServiceClassCode, odfi8: string, at: () => string): string {
  checkEntry(entry, serviceClassCode, at);
  if (entry.accountNumber.trim() === '') throw new NachaInputError(`${at()}.accountNumber`, 'required, got blanks');
  return (
    '6' +
    String(entry.transactionCode) +
    entry.rdfiRouting +
    alpha(entry.accountNumber, 17, () => `${at()}.accountNumber`) +
    numeric(entry.amountCents, 10) +
    alpha(entry.individualIdentification, 15, () => `${at()}.individualIdentification`) +
    alpha(entry.individualName, 22, () => `${at()}.individualName`, true) +
    alpha(entry.discretionaryData ?? '', 2, () => `${at()}.discretionaryData`) +
    '0' +
    odfi8 +
    numeric(entry.traceSequence, 7)
  );
}

function controlTotals(totals: BatchTotals, field: string): void {
  if (totals.debitCents > NACHA_LIMITS.totalCentsMax || totals.creditCents > NACHA_LIMITS.totalCentsMax) {
    throw new NachaInputError(field, `total debits and credits are each at most ${NACHA_LIMITS.totalCentsMax} cents (12 digits)`);
  }
}

/** Appends one batch's records to `out`, returning its totals; entries go in trace number order. */
function writeBatch(out: string[], batch: NachaBatchInput, index: number, odfi8: string, traces: Set<number>): BatchTotals {
  const at = `batches[${index}]`;
  if (batch.entries.length === 0) throw new NachaInputError(`${at}.entries`, 'a batch has at least one entry');
  if (batch.entries.length > NACHA_LIMITS.entriesPerBatchMax) {
    throw new NachaInputError(`${at}.entries`, `at most ${NACHA_LIMITS.entriesPerBatchMax} entries in a batch`);
  }
  const batchNumber = numeric(index + 1, 7);
  out.push(batchHeader(batch, odfi8, batchNumber, at));
  // moov-io/ach and banks expect ascending trace numbers within a batch; sorting a copy keeps the input's order.
  const order = batch.entries.map((_, i) => i).sort((a, b) => batch.entries[a]!.traceSequence - batch.entries[b]!.traceSequence);
  const totals: BatchTotals = { entryCount: 0, entryHash: 0, debitCents: 0, creditCents: 0 };
  for (const i of order) {
    const entry = batch.entries[i]!;
    out.push(entryRecord(entry, batch.serviceClassCode, odfi8, () => `${at}.entries[${i}]`));
    if (traces.has(entry.traceSequence)) {
      throw new NachaInputError(`${at}.entries[${i}].traceSequence`, `trace sequence ${entry.traceSequence} appears twice in the file`);
    }
    traces.add(entry.traceSequence);
    totals.entryCount += 1;
    totals.entryHash += Number(entry.rdfiRouting.slice(0, 8));
    if (isDebitCode(entry.transactionCode)) totals.debitCents += entry.amountCents;
    else totals.creditCents += entry.amountCents;
  }
  totals.entryHash %= ENTRY_HASH_MODULUS;
  controlTotals(totals, at);
  out.push(
    '8' +
      String(batch.serviceClassCode) +
      numeric(totals.entryCount, 6) +
      numeric(totals.entryHash, 10) +
      numeric(totals.debitCents, 12) +
      numeric(totals.creditCents, 12) +
      alpha(batch.companyIdentification, 10, () => `${at}.companyIdentification`) +
      // Message authentication code (19) and reserved (6): blank.
      ' '.repeat(25) +
      odfi8 +
      batchNumber,
  );
  return totals;
}

function checkFileSize(input: NachaFileInput): void {
  if (input.batches.length === 0) throw new NachaInputError('batches', 'a file has at least one batch');
  if (input.batches.length > NACHA_LIMITS.batchesPerFileMax) {
    throw new NachaInputError('batches', `at most ${NACHA_LIMITS.batchesPerFileMax} batches in a file`);
  }
  let entries = 0;
  for (const batch of input.batches) entries += batch.entries.length;
  if (entries > NACHA_LIMITS.entriesPerFileMax) {
    throw new NachaInputError('batches', `at most ${NACHA_LIMITS.entriesPerFileMax} entries in a file, got ${entries}`);
  }
}

export function buildNachaFile(input: NachaFileInput): NachaFile {
  checkFileSize(input);
  const records = [fileHeader(input)];
  const odfi8 = input.odfiRouting.slice(0, 8);
  const traces = new Set<number>();
  const file: BatchTotals = { entryCount: 0, entryHash: 0, debitCents: 0, creditCents: 0 };
  input.batches.forEach((batch, index) => {
    const totals = writeBatch(records, batch, index, odfi8, traces);
    file.entryCount += totals.entryCount;
    file.entryHash += totals.entryHash;
    file.debitCents += totals.debitCents;
    file.creditCents += totals.creditCents;
  });
  file.entryHash %= ENTRY_HASH_MODULUS;
  controlTotals(file, 'batches');
  const blockCount = Math.ceil((records.length + 1) / BLOCKING_FACTOR);
  records.push(
    '9' +
      numeric(input.batches.length, 6) +
      numeric(blockCount, 6) +
      numeric(file.entryCount, 8) +
      numeric(file.entryHash, 10) +
      numeric(file.debitCents, 12) +
      numeric(file.creditCents, 12) +
      ' '.repeat(39),
  );
  while (records.length % BLOCKING_FACTOR !== 0) records.push(FILLER_RECORD);
  return {
    text: records.join('\n') + '\n',
    summary: {
      batchCount: input.batches.length,
      blockCount,
      entryAddendaCount: file.entryCount,
      entryHash: file.entryHash,
      totalDebitCents: file.debitCents,
      totalCreditCents: file.creditCents,
    },
  };
}
