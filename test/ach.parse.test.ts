import fc from 'fast-check';
import { buildNachaFile, type NachaFileInput } from '../src/ach/build';
import { yymmdd } from '../src/ach/nacha';
import { NachaParseError, parseNachaFile, type ParsedNachaFile } from '../src/ach/parse';
import { routingCheckDigit } from '../src/routingNumbers';
import { writeWithAchcli } from './support/achcli';

const ODFI = '091000019';

const forward: NachaFileInput = {
  odfiRouting: ODFI,
  immediateOrigin: ' 123456789',
  immediateDestinationName: 'WELLS FARGO BANK',
  immediateOriginName: 'PAYMENTS LEDGER',
  creationDate: '2026-11-27',
  creationTime: '10:30',
  fileIdModifier: 'B',
  batches: [
    {
      serviceClassCode: 200,
      secCode: 'PPD',
      companyName: 'ACME GAMING',
      companyIdentification: '1234567890',
      companyEntryDescription: 'PAYMENT',
      effectiveEntryDate: '2026-11-27',
      entries: [
        {
          transactionCode: 27,
          rdfiRouting: '021000021',
          accountNumber: '000123456789',
          amountCents: 1250,
          individualIdentification: 'usr_1',
          individualName: 'JANE DOE',
          traceSequence: 1,
        },
        {
          transactionCode: 32,
          rdfiRouting: '011000015',
          accountNumber: '555',
          amountCents: 99,
          individualIdentification: 'usr_2',
          individualName: 'JOHN ROE',
          traceSequence: 2,
        },
      ],
    },
    {
      serviceClassCode: 220,
      secCode: 'CCD',
      companyName: 'ACME GAMING',
      companyIdentification: '1234567890',
      companyEntryDescription: 'SETTLEMENT',
      effectiveEntryDate: '2026-11-30',
      entries: [
        {
          transactionCode: 22,
          rdfiRouting: '122105278',
          accountNumber: '7777777',
          amountCents: 5_000_000,
          individualIdentification: 'tr_1',
          individualName: 'ACME GAMING LLC',
          traceSequence: 3,
        },
      ],
    },
  ],
};

/** What a returned or corrected entry's code is: the forward code less one (27 → 26, 22 → 21, 37 → 36, 32 → 31). */
function returnCodeOf(transactionCode: number): number {
  return transactionCode - 1;
}

/**
 * A return file as the RDFI's bank would send it (moov-io/ach's JSON: achcli computes the controls and
 * writes the file): one batch of returns (addenda 99) and one COR batch of notifications of change (98).
 */
function returnsJson(): unknown {
  const [ppd] = forward.batches;
  const traceOf = (sequence: number) => ODFI.slice(0, 8) + String(sequence).padStart(7, '0');
  const returned = ppd!.entries.map((entry, i) => ({
    transactionCode: returnCodeOf(entry.transactionCode),
    RDFIIdentification: ODFI.slice(0, 8),
    checkDigit: ODFI[8],
    DFIAccountNumber: entry.accountNumber,
    amount: entry.amountCents,
    identificationNumber: entry.individualIdentification,
    individualName: entry.individualName,
    addendaRecordIndicator: 1,
    traceNumber: `02100002${String(i + 1).padStart(7, '0')}`,
    category: 'Return',
    addenda99: {
      typeCode: '99',
      returnCode: ['R01', 'R03'][i],
      originalTrace: traceOf(entry.traceSequence),
      dateOfDeath: '',
      originalDFI: entry.rdfiRouting.slice(0, 8),
      addendaInformation: 'ACCOUNT HOLDER SAYS NO',
      traceNumber: `02100002${String(i + 1).padStart(7, '0')}`,
    },
  }));
  const noc = {
    transactionCode: 21,
    RDFIIdentification: ODFI.slice(0, 8),
    checkDigit: ODFI[8],
    DFIAccountNumber: '7777777',
    amount: 0,
    identificationNumber: 'tr_1',
    individualName: 'ACME GAMING LLC',
    addendaRecordIndicator: 1,
    traceNumber: '122105270000009',
    category: 'NOC',
    addenda98: {
      typeCode: '98',
      changeCode: 'C01',
      originalTrace: traceOf(3),
      originalDFI: '12210527',
      correctedData: '1918171614',
      traceNumber: '122105270000009',
    },
  };
  const batchHeader = (number: number, sec: string, odfi: string, serviceClassCode: number) => ({
    serviceClassCode,
    companyName: 'ACME GAMING',
    companyIdentification: '1234567890',
    standardEntryClassCode: sec,
    companyEntryDescription: sec === 'COR' ? 'SETTLEMENT' : 'PAYMENT',
    effectiveEntryDate: sec === 'COR' ? '' : '261130',
    originatorStatusCode: 1,
    ODFIIdentification: odfi,
    batchNumber: number,
  });
  return {
    fileHeader: {
      immediateDestination: ODFI,
      immediateOrigin: '021000021',
      fileCreationDate: '261130',
      fileCreationTime: '0800',
      fileIDModifier: 'A',
      immediateDestinationName: 'WELLS FARGO BANK',
      immediateOriginName: 'FEDERAL RESERVE BANK',
    },
    batches: [
      { batchHeader: batchHeader(1, 'PPD', '02100002', 200), entryDetails: returned, batchControl: { serviceClassCode: 200 } },
      { batchHeader: batchHeader(2, 'COR', '12210527', 220), entryDetails: [noc], batchControl: { serviceClassCode: 220 } },
    ],
    fileControl: {},
  };
}

function replaceField(text: string, line: number, from: number, value: string): string {
  const lines = text.split('\n');
  const record = lines[line - 1]!;
  lines[line - 1] = record.slice(0, from - 1) + value + record.slice(from - 1 + value.length);
  return lines.join('\n');
}

function expectParseError(text: string, line: number, field: string | RegExp): void {
  let thrown: unknown;
  try {
    parseNachaFile(text);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(NachaParseError);
  expect(thrown).toMatchObject({ line, field });
}

describe('SPEC §25 the NACHA parser reads files back', () => {
  test('a file the builder wrote parses to the rows it was built from, with its controls', () => {
    const built = buildNachaFile(forward);
    const parsed = parseNachaFile(built.bytes);
    expect(parsed.header).toMatchObject({
      immediateDestination: ODFI,
      immediateOrigin: '123456789',
      fileCreationDate: '261127',
      fileCreationTime: '1030',
      fileIdModifier: 'B',
    });
    expect(parsed.batches.map((b) => b.header.secCode)).toEqual(['PPD', 'CCD']);
    expect(parsed.batches[1]!.header).toMatchObject({
      serviceClassCode: 220,
      companyEntryDescription: 'SETTLEMENT',
      effectiveEntryDate: yymmdd('2026-11-30'),
      batchNumber: 2,
    });
    const entries = parsed.batches.flatMap((b) => b.entries);
    expect(
      entries.map(({ transactionCode, rdfiRouting, accountNumber, amountCents, individualIdentification, individualName }) => ({
        transactionCode,
        rdfiRouting,
        accountNumber,
        amountCents,
        individualIdentification,
        individualName,
      })),
    ).toEqual(forward.batches.flatMap((b) => b.entries.map(({ traceSequence: _, ...entry }) => entry)));
    expect(entries.map((e) => e.traceNumber)).toEqual(['091000010000001', '091000010000002', '091000010000003']);
    expect(entries.map((e) => e.line)).toEqual([3, 4, 7]);
    expect(parsed.control).toEqual({
      batchCount: 2,
      blockCount: built.summary.blockCount,
      entryAddendaCount: 3,
      entryHash: built.summary.entryHash,
      totalDebitCents: built.summary.totalDebitCents,
      totalCreditCents: built.summary.totalCreditCents,
    });
  });

  test('returns (addenda 99) and notifications of change (addenda 98) written by moov-io/ach parse field for field', async () => {
    const parsed: ParsedNachaFile = parseNachaFile(await writeWithAchcli(returnsJson()));
    const [returns, changes] = parsed.batches;
    expect(returns!.entries.map((e) => [e.transactionCode, e.amountCents, e.accountNumber, e.rdfiRouting])).toEqual([
      [26, 1250, '000123456789', ODFI],
      [31, 99, '555', ODFI],
    ]);
    expect(returns!.entries.map((e) => e.addenda)).toEqual([
      [
        {
          typeCode: '99',
          returnReasonCode: 'R01',
          originalTraceNumber: '091000010000001',
          dateOfDeath: '',
          originalRdfi: '02100002',
          addendaInformation: 'ACCOUNT HOLDER SAYS NO',
          traceNumber: '021000020000001',
        },
      ],
      [
        {
          typeCode: '99',
          returnReasonCode: 'R03',
          originalTraceNumber: '091000010000002',
          dateOfDeath: '',
          originalRdfi: '01100001',
          addendaInformation: 'ACCOUNT HOLDER SAYS NO',
          traceNumber: '021000020000002',
        },
      ],
    ]);
    expect(returns!.control).toEqual({ entryAddendaCount: 4, entryHash: 2 * 9_100_001, totalDebitCents: 1250, totalCreditCents: 99 });
    expect(changes!.header).toMatchObject({ secCode: 'COR', serviceClassCode: 220, effectiveEntryDate: '000000' });
    expect(changes!.entries[0]).toMatchObject({
      transactionCode: 21,
      amountCents: 0,
      accountNumber: '7777777',
      traceNumber: '122105270000009',
    });
    expect(changes!.entries[0]!.addenda).toEqual([
      {
        typeCode: '98',
        changeCode: 'C01',
        originalTraceNumber: '091000010000003',
        originalRdfi: '12210527',
        correctedData: '1918171614',
        traceNumber: '122105270000009',
      },
    ]);
    expect(parsed.control).toMatchObject({ batchCount: 2, entryAddendaCount: 6, totalDebitCents: 1250, totalCreditCents: 99 });
  });

  test('any file the builder writes parses back to its entries and totals (property)', () => {
    const entryArb = fc.record({
      transactionCode: fc.constantFrom(22, 27, 32, 37),
      rdfiRouting: fc.stringMatching(/^\d{8}$/).map((dfi) => dfi + String(routingCheckDigit(dfi))),
      accountNumber: fc.stringMatching(/^[0-9A-Z-]{1,17}$/),
      amountCents: fc.integer({ min: 1, max: 9_999_999_999 }),
      individualIdentification: fc.stringMatching(/^[A-Za-z0-9_]{0,15}$/),
      individualName: fc.stringMatching(/^[A-Z][A-Z .']{0,21}$/).map((name) => name.trimEnd()),
    });
    fc.assert(
      fc.property(fc.array(fc.array(entryArb, { minLength: 1, maxLength: 30 }), { minLength: 1, maxLength: 5 }), (batches) => {
        let trace = 0;
        const input: NachaFileInput = {
          ...forward,
          batches: batches.map((entries) => ({
            ...forward.batches[0]!,
            entries: entries.map((entry) => ({ ...entry, traceSequence: (trace += 1) })),
          })),
        };
        const built = buildNachaFile(input);
        const parsed = parseNachaFile(built.bytes);
        expect(
          parsed.batches.map((b) =>
            b.entries.map((e) => [
              e.transactionCode,
              e.rdfiRouting,
              e.accountNumber,
              e.amountCents,
              e.individualIdentification,
              e.individualName,
            ]),
          ),
        ).toEqual(
          input.batches.map((b) =>
            b.entries.map((e) => [
              e.transactionCode,
              e.rdfiRouting,
              e.accountNumber,
              e.amountCents,
              e.individualIdentification,
              e.individualName,
            ]),
          ),
        );
        expect(parsed.control.entryHash).toBe(built.summary.entryHash);
        expect([parsed.control.totalDebitCents, parsed.control.totalCreditCents]).toEqual([
          built.summary.totalDebitCents,
          built.summary.totalCreditCents,
        ]);
      }),
      { numRuns: 200 },
    );
  });

  test('CRLF line ends and a file without line breaks read the same', () => {
    const text = buildNachaFile(forward).bytes.toString('latin1');
    const expected = parseNachaFile(text);
    expect(parseNachaFile(text.replace(/\n/g, '\r\n'))).toEqual(expected);
    expect(parseNachaFile(text.replace(/\n/g, ''))).toEqual(expected);
  });
});

describe('SPEC §25 a file that does not add up is refused, naming the line and the field', () => {
  const text = buildNachaFile(forward).bytes.toString('latin1');
  // Lines: 1 file header, 2 batch header, 3–4 entries, 5 batch control, 6 batch header, 7 entry, 8 batch control, 9 file control, 10 nines.
  test.each([
    ['a record one character short', () => text.replace(/^(6.{92}).$/m, '$1'), 3, 'record'],
    ['an amount that is not digits', () => replaceField(text, 3, 30, '00000012X0'), 3, 'amount'],
    ['a batch control whose entry hash is off by one', () => replaceField(text, 5, 11, '0003100003'), 5, 'entry hash'],
    [
      'a batch control whose debit total is off by a cent',
      () => replaceField(text, 5, 21, '000000001251'),
      5,
      'total debit entry dollar amount',
    ],
    ['a batch control whose count is wrong', () => replaceField(text, 8, 5, '000002'), 8, 'entry/addenda count'],
    ['a batch control of another batch number', () => replaceField(text, 8, 88, '0000003'), 8, 'batch number'],
    [
      'a file control whose credit total is wrong',
      () => replaceField(text, 9, 44, '000005000100'),
      9,
      'total credit entry dollar amount in file',
    ],
    ['a file control whose block count is wrong', () => replaceField(text, 9, 8, '000002'), 9, 'block count'],
    ['a file control whose batch count is wrong', () => replaceField(text, 9, 2, '000003'), 9, 'batch count'],
    ['an entry that says it has an addenda and has none', () => replaceField(text, 4, 79, '1'), 4, 'addenda record indicator'],
    ['a record that is not a nines filler after the file control', () => replaceField(text, 10, 1, '8'), 10, 'record'],
    ['an entry where the batch control should be', () => replaceField(text, 8, 1, '5'), 8, 'record type'],
    ['a file whose first record is not a file header', () => replaceField(text, 1, 1, '5'), 1, 'record type'],
  ])('%s', (_, corrupt, line, field) => expectParseError(corrupt(), line, field));

  test('a file not blocked by 10 is refused as a whole', () => {
    const lines = text.split('\n');
    expect(() => parseNachaFile(lines.slice(0, 9).join('\n'))).toThrow('blocking: the file has 9 records, not a multiple of 10');
    expectParseError([...lines.slice(0, 10), '9'.repeat(94)].join('\n'), 9, 'block count');
  });

  test('an unknown addenda type and a return reason that is not R and two digits are named', async () => {
    const returns = await writeWithAchcli(returnsJson());
    expectParseError(replaceField(returns, 4, 2, '02'), 4, 'addenda type code');
    expectParseError(replaceField(returns, 4, 4, 'X01'), 4, 'return reason code');
    expect(() => parseNachaFile(replaceField(returns, 4, 4, 'X01'))).toThrow(
      'line 4, return reason code: must be R and two digits, got "X01"',
    );
  });

  test('an empty file and a file with no file control are refused', () => {
    expectParseError('', 0, 'file');
    expectParseError(text.split('\n').slice(0, 8).join('\n'), 8, 'file');
  });
});
