import {
  BLOCKING_FACTOR,
  ENTRY_HASH_MODULUS,
  FILE_ID_MODIFIERS,
  NACHA_LIMITS,
  RECORD_LENGTH,
  SEC_CODES,
  SERVICE_CLASS_CODES,
  TRANSACTION_CODES,
  isDebitCode,
  yymmdd,
  type SecCode,
  type ServiceClassCode,
  type TransactionCode,
} from './nacha';
import { isRoutingNumber } from '../routingNumbers';

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
  bytes: Buffer;
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

const ISO_DATE = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
const TIME = /^([01]\d|2[0-3]):[0-5]\d$/;
const ENTRY_CODES: ReadonlySet<number> = new Set(Object.values(TRANSACTION_CODES));
const LINE = RECORD_LENGTH + 1;
const SPACE = 0x20;
const ZERO = 0x30;

/**
 * Writes records straight into the file's buffer, pre-filled with blanks, field by field at the Rules'
 * 1-based positions. No string per record is made: a 100,000-entry file is about 9.5 MB, and building it
 * from concatenated strings spent most of its time collecting them.
 */
class RecordWriter {
  readonly bytes: Buffer;
  private record = -LINE;

  constructor(recordCount: number) {
    this.bytes = Buffer.alloc(recordCount * LINE, SPACE);
  }

  next(type: string): this {
    this.record += LINE;
    this.bytes[this.record] = type.charCodeAt(0);
    this.bytes[this.record + RECORD_LENGTH] = 0x0a;
    return this;
  }

  /** Left-justified, blank-filled; printable ASCII only; nothing longer than the field is cut to fit. */
  text(position: number, width: number, value: string, field: () => string, required = false): this {
    if (value.length > width) throw new NachaInputError(field(), `at most ${width} characters, got ${value.length}`);
    const base = this.record + position - 1;
    let blank = true;
    for (let i = 0; i < value.length; i += 1) {
      const code = value.charCodeAt(i);
      if (code < SPACE || code > 0x7e) throw new NachaInputError(field(), 'printable ASCII only (NACHA fields are ASCII)');
      if (code !== SPACE) blank = false;
      this.bytes[base + i] = code;
    }
    if (required && blank) throw new NachaInputError(field(), 'required, got blanks');
    return this;
  }

  /** Right-justified, zero-filled; the caller has checked that `value` fits. */
  number(position: number, width: number, value: number): this {
    let rest = value;
    for (let i = this.record + position - 2 + width; i >= this.record + position - 1; i -= 1) {
      this.bytes[i] = ZERO + (rest % 10);
      rest = Math.floor(rest / 10);
    }
    return this;
  }

  /** Text already known to be ASCII of the field's width (codes, routing numbers, dates). */
  fixed(position: number, value: string): this {
    this.bytes.write(value, this.record + position - 1, 'latin1');
    return this;
  }

  fillRest(): void {
    for (let at = this.record + LINE; at < this.bytes.length; at += LINE) {
      this.bytes.fill(0x39, at, at + RECORD_LENGTH);
      this.bytes[at + RECORD_LENGTH] = 0x0a;
    }
  }
}

function isoDate(value: string, field: () => string): string {
  if (!ISO_DATE.test(value)) throw new NachaInputError(field(), `a date YYYY-MM-DD, got "${value}"`);
  return yymmdd(value);
}

function writeFileHeader(out: RecordWriter, input: NachaFileInput): void {
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
  out
    .next('1')
    .fixed(2, '01')
    .fixed(5, input.odfiRouting)
    .text(14, 10, input.immediateOrigin, () => 'immediateOrigin', true)
    .fixed(
      24,
      isoDate(input.creationDate, () => 'creationDate'),
    )
    .fixed(30, input.creationTime.slice(0, 2) + input.creationTime.slice(3, 5))
    .fixed(34, input.fileIdModifier)
    .fixed(35, '094101')
    .text(41, 23, input.immediateDestinationName, () => 'immediateDestinationName', true)
    .text(64, 23, input.immediateOriginName, () => 'immediateOriginName', true)
    .text(87, 8, input.referenceCode ?? '', () => 'referenceCode');
}

interface BatchTotals {
  entryCount: number;
  entryHash: number;
  debitCents: number;
  creditCents: number;
}

function writeBatchHeader(out: RecordWriter, batch: NachaBatchInput, odfi8: string, batchNumber: number, at: string): void {
  if (!SERVICE_CLASS_CODES.includes(batch.serviceClassCode)) {
    throw new NachaInputError(`${at}.serviceClassCode`, `one of ${SERVICE_CLASS_CODES.join(', ')}, got ${batch.serviceClassCode}`);
  }
  if (!SEC_CODES.includes(batch.secCode)) {
    throw new NachaInputError(`${at}.secCode`, `one of ${SEC_CODES.join(', ')}, got "${batch.secCode}"`);
  }
  out
    .next('5')
    .number(2, 3, batch.serviceClassCode)
    .text(5, 16, batch.companyName, () => `${at}.companyName`, true)
    .text(21, 20, batch.companyDiscretionaryData ?? '', () => `${at}.companyDiscretionaryData`)
    .text(41, 10, batch.companyIdentification, () => `${at}.companyIdentification`, true)
    .fixed(51, batch.secCode)
    .text(54, 10, batch.companyEntryDescription, () => `${at}.companyEntryDescription`, true)
    .text(64, 6, batch.companyDescriptiveDate ?? '', () => `${at}.companyDescriptiveDate`)
    .fixed(
      70,
      isoDate(batch.effectiveEntryDate, () => `${at}.effectiveEntryDate`),
    )
    // Settlement date (76–78, Julian) stays blank: the ACH operator fills it in.
    .fixed(79, '1')
    .fixed(80, odfi8)
    .number(88, 7, batchNumber);
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

function writeEntry(out: RecordWriter, entry: NachaEntryInput, serviceClassCode: ServiceClassCode, odfi8: string, at: () => string): void {
  checkEntry(entry, serviceClassCode, at);
  out
    .next('6')
    .number(2, 2, entry.transactionCode)
    .fixed(4, entry.rdfiRouting)
    .text(13, 17, entry.accountNumber, () => `${at()}.accountNumber`, true)
    .number(30, 10, entry.amountCents)
    .text(40, 15, entry.individualIdentification, () => `${at()}.individualIdentification`)
    .text(55, 22, entry.individualName, () => `${at()}.individualName`, true)
    .text(77, 2, entry.discretionaryData ?? '', () => `${at()}.discretionaryData`)
    .fixed(79, '0')
    .fixed(80, odfi8)
    .number(88, 7, entry.traceSequence);
}

function checkTotals(totals: BatchTotals, field: string): void {
  if (totals.debitCents > NACHA_LIMITS.totalCentsMax || totals.creditCents > NACHA_LIMITS.totalCentsMax) {
    throw new NachaInputError(field, `total debits and credits are each at most ${NACHA_LIMITS.totalCentsMax} cents (12 digits)`);
  }
}

/** The batch's entries in ascending trace order (moov-io/ach and banks expect it); the input is not reordered. */
function traceOrder(entries: readonly NachaEntryInput[]): number[] {
  const order = entries.map((_, i) => i);
  for (let i = 1; i < entries.length; i += 1) {
    if (entries[i]!.traceSequence < entries[i - 1]!.traceSequence) {
      return order.sort((a, b) => entries[a]!.traceSequence - entries[b]!.traceSequence);
    }
  }
  return order;
}

/** Writes one batch's records, returning its totals. */
function writeBatch(out: RecordWriter, batch: NachaBatchInput, index: number, odfi8: string, traces: Set<number>): BatchTotals {
  const at = `batches[${index}]`;
  if (batch.entries.length === 0) throw new NachaInputError(`${at}.entries`, 'a batch has at least one entry');
  if (batch.entries.length > NACHA_LIMITS.entriesPerBatchMax) {
    throw new NachaInputError(`${at}.entries`, `at most ${NACHA_LIMITS.entriesPerBatchMax} entries in a batch`);
  }
  writeBatchHeader(out, batch, odfi8, index + 1, at);
  const totals: BatchTotals = { entryCount: 0, entryHash: 0, debitCents: 0, creditCents: 0 };
  for (const i of traceOrder(batch.entries)) {
    const entry = batch.entries[i]!;
    writeEntry(out, entry, batch.serviceClassCode, odfi8, () => `${at}.entries[${i}]`);
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
  checkTotals(totals, at);
  out
    .next('8')
    .number(2, 3, batch.serviceClassCode)
    .number(5, 6, totals.entryCount)
    .number(11, 10, totals.entryHash)
    .number(21, 12, totals.debitCents)
    .number(33, 12, totals.creditCents)
    .text(45, 10, batch.companyIdentification, () => `${at}.companyIdentification`)
    // Message authentication code (55–73) and reserved (74–79) stay blank.
    .fixed(80, odfi8)
    .number(88, 7, index + 1);
  return totals;
}

/** Checks the file's size against the fields' limits and returns its record count, blocked by 10. */
function blockedRecordCount(input: NachaFileInput): number {
  if (input.batches.length === 0) throw new NachaInputError('batches', 'a file has at least one batch');
  if (input.batches.length > NACHA_LIMITS.batchesPerFileMax) {
    throw new NachaInputError('batches', `at most ${NACHA_LIMITS.batchesPerFileMax} batches in a file`);
  }
  let entries = 0;
  for (const batch of input.batches) entries += batch.entries.length;
  if (entries > NACHA_LIMITS.entriesPerFileMax) {
    throw new NachaInputError('batches', `at most ${NACHA_LIMITS.entriesPerFileMax} entries in a file, got ${entries}`);
  }
  const records = 2 + 2 * input.batches.length + entries;
  return Math.ceil(records / BLOCKING_FACTOR) * BLOCKING_FACTOR;
}

export function buildNachaFile(input: NachaFileInput): NachaFile {
  const recordCount = blockedRecordCount(input);
  const out = new RecordWriter(recordCount);
  writeFileHeader(out, input);
  const odfi8 = input.odfiRouting.slice(0, 8);
  const traces = new Set<number>();
  const file: BatchTotals = { entryCount: 0, entryHash: 0, debitCents: 0, creditCents: 0 };
  input.batches.forEach((batch, index) => {
    const totals = writeBatch(out, batch, index, odfi8, traces);
    file.entryCount += totals.entryCount;
    file.entryHash += totals.entryHash;
    file.debitCents += totals.debitCents;
    file.creditCents += totals.creditCents;
  });
  file.entryHash %= ENTRY_HASH_MODULUS;
  checkTotals(file, 'batches');
  const blockCount = recordCount / BLOCKING_FACTOR;
  out
    .next('9')
    .number(2, 6, input.batches.length)
    .number(8, 6, blockCount)
    .number(14, 8, file.entryCount)
    .number(22, 10, file.entryHash)
    .number(32, 12, file.debitCents)
    .number(44, 12, file.creditCents);
  out.fillRest();
  return {
    bytes: out.bytes,
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
