import { BLOCKING_FACTOR, ENTRY_HASH_MODULUS, FILLER_RECORD, RECORD_LENGTH, isDebitCode } from './nacha';

/**
 * Reads a NACHA file, above all the bank's return and notification-of-change files (SPEC §25: entries with
 * addenda 99 and 98), into batches, entries and addenda, checking what the bank's own software would:
 * record lengths and order, blocking, every count, entry hash and total. A file that does not add up is
 * refused whole, naming the line and the field, so that it is kept as an exception instead of half-applied.
 */

export interface ParsedFileHeader {
  immediateDestination: string;
  immediateOrigin: string;
  /** YYMMDD and HHMM as written. */
  fileCreationDate: string;
  fileCreationTime: string;
  fileIdModifier: string;
  immediateDestinationName: string;
  immediateOriginName: string;
  referenceCode: string;
}

export interface ParsedReturnAddenda {
  typeCode: '99';
  returnReasonCode: string;
  originalTraceNumber: string;
  dateOfDeath: string;
  originalRdfi: string;
  addendaInformation: string;
  traceNumber: string;
}

export interface ParsedChangeAddenda {
  typeCode: '98';
  changeCode: string;
  originalTraceNumber: string;
  originalRdfi: string;
  correctedData: string;
  traceNumber: string;
}

export interface ParsedPaymentAddenda {
  typeCode: '05';
  paymentRelatedInformation: string;
  addendaSequenceNumber: number;
  entryDetailSequenceNumber: string;
}

export type ParsedAddenda = ParsedReturnAddenda | ParsedChangeAddenda | ParsedPaymentAddenda;

export interface ParsedEntry {
  /** The entry's 1-based line in the file, for exceptions that point at it. */
  line: number;
  transactionCode: number;
  /** 9 digits: the 8-digit RDFI identification and its check digit. */
  rdfiRouting: string;
  accountNumber: string;
  amountCents: number;
  individualIdentification: string;
  individualName: string;
  discretionaryData: string;
  traceNumber: string;
  addenda: ParsedAddenda[];
}

export interface ParsedBatchHeader {
  serviceClassCode: number;
  companyName: string;
  companyDiscretionaryData: string;
  companyIdentification: string;
  secCode: string;
  companyEntryDescription: string;
  companyDescriptiveDate: string;
  /** YYMMDD as written (a COR batch may carry blanks or zeros). */
  effectiveEntryDate: string;
  settlementDate: string;
  originatorStatusCode: string;
  odfiIdentification: string;
  batchNumber: number;
}

export interface ParsedBatchControl {
  entryAddendaCount: number;
  entryHash: number;
  totalDebitCents: number;
  totalCreditCents: number;
}

export interface ParsedBatch {
  header: ParsedBatchHeader;
  entries: ParsedEntry[];
  control: ParsedBatchControl;
}

export interface ParsedFileControl extends ParsedBatchControl {
  batchCount: number;
  blockCount: number;
}

export interface ParsedNachaFile {
  header: ParsedFileHeader;
  batches: ParsedBatch[];
  control: ParsedFileControl;
}

export const PARSE_LIMITS = {
  /** A return file of a day: far below this; a larger input is not a NACHA file we expect. */
  recordsMax: 10_000_000,
  addendaPerEntryMax: 9_999,
} as const;

export class NachaParseError extends Error {
  override name = 'NachaParseError';
  constructor(
    /** 1-based; 0 for the file as a whole. */
    readonly line: number,
    readonly field: string,
    problem: string,
  ) {
    super(line > 0 ? `line ${line}, ${field}: ${problem}` : `${field}: ${problem}`);
  }
}

/** One record being read: its line number and 1-based, inclusive field positions as the Rules print them. */
class Record {
  constructor(
    readonly text: string,
    readonly line: number,
  ) {}

  alpha(from: number, to: number): string {
    return this.text.slice(from - 1, to).trimEnd();
  }

  raw(from: number, to: number): string {
    return this.text.slice(from - 1, to);
  }

  digits(from: number, to: number, field: string): string {
    const value = this.text.slice(from - 1, to);
    if (!/^\d+$/.test(value)) throw new NachaParseError(this.line, field, `positions ${from}–${to} must be digits, got "${value}"`);
    return value;
  }

  number(from: number, to: number, field: string): number {
    return Number(this.digits(from, to, field));
  }

  expect(actual: number | string, written: number | string, field: string): void {
    if (actual !== written) throw new NachaParseError(this.line, field, `says ${written}, the records add up to ${actual}`);
  }
}

/** Splits into records: one per line (LF or CRLF), or a line-less file cut every 94 characters. */
function recordsOf(text: string): Record[] {
  const unbroken = !text.includes('\n') && text.length % RECORD_LENGTH === 0;
  const lines = unbroken ? (text.match(new RegExp(`.{${RECORD_LENGTH}}`, 'g')) ?? []) : text.split(/\r?\n/);
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  if (lines.length === 0) throw new NachaParseError(0, 'file', 'is empty');
  if (lines.length > PARSE_LIMITS.recordsMax) throw new NachaParseError(0, 'file', `has over ${PARSE_LIMITS.recordsMax} records`);
  return lines.map((line, index) => {
    if (line.length !== RECORD_LENGTH) {
      throw new NachaParseError(index + 1, 'record', `is ${line.length} characters, not ${RECORD_LENGTH}`);
    }
    if (!/^[\x20-\x7e]*$/.test(line)) throw new NachaParseError(index + 1, 'record', 'holds a character that is not printable ASCII');
    return new Record(line, index + 1);
  });
}

function fileHeaderOf(record: Record): ParsedFileHeader {
  if (record.raw(1, 1) !== '1') throw new NachaParseError(record.line, 'record type', 'a file starts with its file header (type 1)');
  if (record.raw(35, 37) !== '094') throw new NachaParseError(record.line, 'record size', `must be 094, got "${record.raw(35, 37)}"`);
  if (record.raw(38, 39) !== '10') throw new NachaParseError(record.line, 'blocking factor', `must be 10, got "${record.raw(38, 39)}"`);
  return {
    immediateDestination: record.raw(4, 13).trim(),
    immediateOrigin: record.raw(14, 23).trim(),
    fileCreationDate: record.digits(24, 29, 'file creation date'),
    fileCreationTime: record.alpha(30, 33),
    fileIdModifier: record.raw(34, 34),
    immediateDestinationName: record.alpha(41, 63),
    immediateOriginName: record.alpha(64, 86),
    referenceCode: record.alpha(87, 94),
  };
}

function batchHeaderOf(record: Record): ParsedBatchHeader {
  return {
    serviceClassCode: record.number(2, 4, 'service class code'),
    companyName: record.alpha(5, 20),
    companyDiscretionaryData: record.alpha(21, 40),
    companyIdentification: record.alpha(41, 50),
    secCode: record.raw(51, 53),
    companyEntryDescription: record.alpha(54, 63),
    companyDescriptiveDate: record.alpha(64, 69),
    effectiveEntryDate: record.alpha(70, 75),
    settlementDate: record.alpha(76, 78),
    originatorStatusCode: record.raw(79, 79),
    odfiIdentification: record.digits(80, 87, 'originating DFI identification'),
    batchNumber: record.number(88, 94, 'batch number'),
  };
}

function entryOf(record: Record): ParsedEntry & { addendaIndicator: string } {
  return {
    line: record.line,
    transactionCode: record.number(2, 3, 'transaction code'),
    rdfiRouting: record.digits(4, 12, 'receiving DFI identification and check digit'),
    accountNumber: record.alpha(13, 29).trimStart(),
    amountCents: record.number(30, 39, 'amount'),
    individualIdentification: record.alpha(40, 54),
    individualName: record.alpha(55, 76),
    discretionaryData: record.alpha(77, 78),
    addendaIndicator: record.raw(79, 79),
    traceNumber: record.digits(80, 94, 'trace number'),
    addenda: [],
  };
}

function addendaOf(record: Record): ParsedAddenda {
  const typeCode = record.raw(2, 3);
  if (typeCode === '99') {
    const code = record.raw(4, 6);
    if (!/^R\d\d$/.test(code)) throw new NachaParseError(record.line, 'return reason code', `must be R and two digits, got "${code}"`);
    return {
      typeCode,
      returnReasonCode: code,
      originalTraceNumber: record.digits(7, 21, 'original entry trace number'),
      dateOfDeath: record.alpha(22, 27),
      originalRdfi: record.digits(28, 35, 'original receiving DFI identification'),
      addendaInformation: record.alpha(36, 79),
      traceNumber: record.digits(80, 94, 'trace number'),
    };
  }
  if (typeCode === '98') {
    const code = record.raw(4, 6);
    if (!/^C\d\d$/.test(code)) throw new NachaParseError(record.line, 'change code', `must be C and two digits, got "${code}"`);
    return {
      typeCode,
      changeCode: code,
      originalTraceNumber: record.digits(7, 21, 'original entry trace number'),
      originalRdfi: record.digits(28, 35, 'original receiving DFI identification'),
      correctedData: record.alpha(36, 64),
      traceNumber: record.digits(80, 94, 'trace number'),
    };
  }
  if (typeCode === '05') {
    return {
      typeCode,
      paymentRelatedInformation: record.alpha(4, 83),
      addendaSequenceNumber: record.number(84, 87, 'addenda sequence number'),
      entryDetailSequenceNumber: record.digits(88, 94, 'entry detail sequence number'),
    };
  }
  throw new NachaParseError(record.line, 'addenda type code', `must be 05, 98 or 99, got "${typeCode}"`);
}

/** Reads one batch from records[at] (its header) through its control; returns it and the index after it. */
function batchAt(records: Record[], at: number): { batch: ParsedBatch; next: number } {
  const headerRecord = records[at]!;
  const header = batchHeaderOf(headerRecord);
  const entries: ParsedEntry[] = [];
  const sums = { entryAddendaCount: 0, entryHash: 0, totalDebitCents: 0, totalCreditCents: 0 };
  let index = at + 1;
  for (;;) {
    const record = records[index];
    if (record === undefined) throw new NachaParseError(headerRecord.line, 'batch', 'has no batch control (type 8)');
    const type = record.raw(1, 1);
    if (type === '8') break;
    if (type !== '6') throw new NachaParseError(record.line, 'record type', `an entry (6) or a batch control (8) here, got "${type}"`);
    const { addendaIndicator, ...entry } = entryOf(record);
    index += 1;
    while (records[index]?.raw(1, 1) === '7') {
      if (entry.addenda.length >= PARSE_LIMITS.addendaPerEntryMax)
        throw new NachaParseError(records[index]!.line, 'addenda', 'too many for one entry');
      entry.addenda.push(addendaOf(records[index]!));
      index += 1;
    }
    if ((addendaIndicator === '1') !== entry.addenda.length > 0 || !/^[01]$/.test(addendaIndicator)) {
      throw new NachaParseError(
        record.line,
        'addenda record indicator',
        `is "${addendaIndicator}" with ${entry.addenda.length} addenda records`,
      );
    }
    entries.push(entry);
    sums.entryAddendaCount += 1 + entry.addenda.length;
    sums.entryHash += Number(entry.rdfiRouting.slice(0, 8));
    if (isDebitCode(entry.transactionCode)) sums.totalDebitCents += entry.amountCents;
    else sums.totalCreditCents += entry.amountCents;
  }
  sums.entryHash %= ENTRY_HASH_MODULUS;
  const control = checkBatchControl(records[index]!, header, sums);
  return { batch: { header, entries, control }, next: index + 1 };
}

function checkBatchControl(record: Record, header: ParsedBatchHeader, sums: ParsedBatchControl): ParsedBatchControl {
  record.expect(header.serviceClassCode, record.number(2, 4, 'service class code'), 'service class code');
  const control: ParsedBatchControl = {
    entryAddendaCount: record.number(5, 10, 'entry/addenda count'),
    entryHash: record.number(11, 20, 'entry hash'),
    totalDebitCents: record.number(21, 32, 'total debit entry dollar amount'),
    totalCreditCents: record.number(33, 44, 'total credit entry dollar amount'),
  };
  record.expect(sums.entryAddendaCount, control.entryAddendaCount, 'entry/addenda count');
  record.expect(sums.entryHash, control.entryHash, 'entry hash');
  record.expect(sums.totalDebitCents, control.totalDebitCents, 'total debit entry dollar amount');
  record.expect(sums.totalCreditCents, control.totalCreditCents, 'total credit entry dollar amount');
  record.expect(header.odfiIdentification, record.digits(80, 87, 'originating DFI identification'), 'originating DFI identification');
  record.expect(header.batchNumber, record.number(88, 94, 'batch number'), 'batch number');
  return control;
}

function checkFileControl(record: Record, batches: ParsedBatch[], recordCount: number): ParsedFileControl {
  const control: ParsedFileControl = {
    batchCount: record.number(2, 7, 'batch count'),
    blockCount: record.number(8, 13, 'block count'),
    entryAddendaCount: record.number(14, 21, 'entry/addenda count'),
    entryHash: record.number(22, 31, 'entry hash'),
    totalDebitCents: record.number(32, 43, 'total debit entry dollar amount in file'),
    totalCreditCents: record.number(44, 55, 'total credit entry dollar amount in file'),
  };
  let entryAddendaCount = 0;
  let entryHash = 0;
  let debits = 0;
  let credits = 0;
  for (const { control: batch } of batches) {
    entryAddendaCount += batch.entryAddendaCount;
    entryHash += batch.entryHash;
    debits += batch.totalDebitCents;
    credits += batch.totalCreditCents;
  }
  record.expect(batches.length, control.batchCount, 'batch count');
  record.expect(Math.ceil(recordCount / BLOCKING_FACTOR), control.blockCount, 'block count');
  record.expect(entryAddendaCount, control.entryAddendaCount, 'entry/addenda count');
  record.expect(entryHash % ENTRY_HASH_MODULUS, control.entryHash, 'entry hash');
  record.expect(debits, control.totalDebitCents, 'total debit entry dollar amount in file');
  record.expect(credits, control.totalCreditCents, 'total credit entry dollar amount in file');
  return control;
}

/** `file` as downloaded (bytes, read as Latin-1 so that a stray byte is reported, not decoded away) or as text. */
export function parseNachaFile(file: string | Buffer): ParsedNachaFile {
  const records = recordsOf(typeof file === 'string' ? file : file.toString('latin1'));
  const header = fileHeaderOf(records[0]!);
  const batches: ParsedBatch[] = [];
  let index = 1;
  while (records[index]?.raw(1, 1) === '5') {
    const { batch, next } = batchAt(records, index);
    batches.push(batch);
    index = next;
  }
  const controlRecord = records[index];
  if (controlRecord === undefined) throw new NachaParseError(records.length, 'file', 'ends without a file control (type 9)');
  if (controlRecord.raw(1, 1) !== '9') {
    throw new NachaParseError(
      controlRecord.line,
      'record type',
      `a batch header (5) or the file control (9) here, got "${controlRecord.raw(1, 1)}"`,
    );
  }
  const control = checkFileControl(controlRecord, batches, records.length);
  for (const filler of records.slice(index + 1)) {
    if (filler.text !== FILLER_RECORD)
      throw new NachaParseError(filler.line, 'record', 'after the file control only records of nines may follow');
  }
  if (records.length % BLOCKING_FACTOR !== 0) {
    throw new NachaParseError(0, 'blocking', `the file has ${records.length} records, not a multiple of ${BLOCKING_FACTOR}`);
  }
  return { header, batches, control };
}
