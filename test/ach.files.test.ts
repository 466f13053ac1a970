import fc from 'fast-check';
import { buildNachaFile, NachaInputError, type NachaBatchInput, type NachaEntryInput, type NachaFileInput } from '../src/ach/build';
import { FILE_ID_MODIFIERS, fileIdModifierOf, isDebitCode, RECORD_LENGTH, yymmdd } from '../src/ach/nacha';
import { isRoutingNumber, routingCheckDigit } from '../src/routingNumbers';
import { readWithAchcli, writeWithAchcli, type MoovFile } from './support/achcli';

const ODFI = '091000019';

function header(batches: NachaBatchInput[], overrides: Partial<NachaFileInput> = {}): NachaFileInput {
  return {
    odfiRouting: ODFI,
    immediateOrigin: ' 123456789',
    immediateDestinationName: 'WELLS FARGO BANK',
    immediateOriginName: 'PAYMENTS LEDGER',
    creationDate: '2026-11-27',
    creationTime: '10:30',
    fileIdModifier: 'A',
    batches,
    ...overrides,
  };
}

function entry(overrides: Partial<NachaEntryInput> & Pick<NachaEntryInput, 'traceSequence'>): NachaEntryInput {
  return {
    transactionCode: 27,
    rdfiRouting: '021000021',
    accountNumber: '000123456789',
    amountCents: 1250,
    individualIdentification: 'usr_0001',
    individualName: 'JANE DOE',
    ...overrides,
  };
}

function batch(overrides: Partial<NachaBatchInput> & Pick<NachaBatchInput, 'entries'>): NachaBatchInput {
  return {
    serviceClassCode: 200,
    secCode: 'PPD',
    companyName: 'ACME GAMING',
    companyIdentification: '1234567890',
    companyEntryDescription: 'PAYMENT',
    effectiveEntryDate: '2026-11-27',
    ...overrides,
  };
}

/** Every field achcli read back equals what we put in (moov trims the alphanumeric fields' padding). */
function expectSameAsInput(moov: MoovFile, input: NachaFileInput): void {
  expect(moov.fileHeader.immediateDestination).toBe(input.odfiRouting);
  expect(moov.fileHeader.immediateOrigin).toBe(input.immediateOrigin.trim());
  expect(moov.fileHeader.fileCreationDate).toBe(yymmdd(input.creationDate));
  expect(moov.fileHeader.fileCreationTime).toBe(input.creationTime.replace(':', ''));
  expect(moov.fileHeader.fileIDModifier).toBe(input.fileIdModifier);
  expect(moov.fileHeader.immediateDestinationName).toBe(input.immediateDestinationName.trim());
  expect(moov.fileHeader.immediateOriginName).toBe(input.immediateOriginName.trim());
  expect(moov.batches).toHaveLength(input.batches.length);
  let debits = 0;
  let credits = 0;
  input.batches.forEach((batchIn, b) => {
    const read = moov.batches[b]!;
    expect(read.batchHeader).toMatchObject({
      serviceClassCode: batchIn.serviceClassCode,
      companyName: batchIn.companyName.trim(),
      companyIdentification: batchIn.companyIdentification.trim(),
      standardEntryClassCode: batchIn.secCode,
      companyEntryDescription: batchIn.companyEntryDescription.trim(),
      effectiveEntryDate: yymmdd(batchIn.effectiveEntryDate),
      originatorStatusCode: 1,
      ODFIIdentification: ODFI.slice(0, 8),
      batchNumber: b + 1,
    });
    const sorted = [...batchIn.entries].sort((x, y) => x.traceSequence - y.traceSequence);
    expect(read.entryDetails).toHaveLength(sorted.length);
    sorted.forEach((entryIn, e) => {
      const got = read.entryDetails[e]!;
      expect(got.transactionCode).toBe(entryIn.transactionCode);
      expect(got.RDFIIdentification + got.checkDigit).toBe(entryIn.rdfiRouting);
      expect(got.DFIAccountNumber.trim()).toBe(entryIn.accountNumber.trim());
      expect(got.amount).toBe(entryIn.amountCents);
      expect(got.identificationNumber.trim()).toBe(entryIn.individualIdentification.trim());
      expect(got.individualName.trim()).toBe(entryIn.individualName.trim());
      expect(got.traceNumber).toBe(ODFI.slice(0, 8) + String(entryIn.traceSequence).padStart(7, '0'));
      if (isDebitCode(entryIn.transactionCode)) debits += entryIn.amountCents;
      else credits += entryIn.amountCents;
    });
    const hash = sorted.reduce((sum, x) => sum + Number(x.rdfiRouting.slice(0, 8)), 0) % 1e10;
    expect(read.batchControl).toMatchObject({ entryAddendaCount: sorted.length, entryHash: hash, batchNumber: b + 1 });
  });
  const entryCount = input.batches.reduce((sum, x) => sum + x.entries.length, 0);
  expect(moov.fileControl).toMatchObject({
    batchCount: input.batches.length,
    entryAddendaCount: entryCount,
    totalDebit: debits,
    totalCredit: credits,
  });
}

function expectBlocked(bytes: Buffer): void {
  const lines = bytes.toString('latin1').split('\n');
  expect(lines.pop()).toBe('');
  expect(lines.length % 10).toBe(0);
  for (const line of lines) expect(line).toHaveLength(RECORD_LENGTH);
}

describe('SPEC §24 NACHA files, read back by moov-io/ach', () => {
  test('a PPD batch of debits and credits (checking and savings) reads back field for field, blocked by 10 with nines', async () => {
    const input = header([
      batch({
        entries: [
          entry({ traceSequence: 3, transactionCode: 27, amountCents: 1250 }),
          entry({
            traceSequence: 1,
            transactionCode: 22,
            rdfiRouting: '011000015',
            accountNumber: '9999',
            amountCents: 700,
            individualName: 'JOHN ROE',
          }),
          entry({
            traceSequence: 2,
            transactionCode: 37,
            rdfiRouting: '091000019',
            amountCents: 99_999,
            individualIdentification: 'usr_0002',
          }),
          entry({ traceSequence: 4, transactionCode: 32, amountCents: 1, accountNumber: '12345678901234567' }),
        ],
      }),
    ]);
    const built = buildNachaFile(input);
    expectBlocked(built.bytes);
    // 1 file header + 1 batch header + 4 entries + 1 batch control + 1 file control = 8 records, 2 of nines.
    expect(
      built.bytes
        .toString('latin1')
        .split('\n')
        .filter((line) => line === '9'.repeat(94)),
    ).toHaveLength(2);
    expect(built.summary).toMatchObject({
      batchCount: 1,
      blockCount: 1,
      entryAddendaCount: 4,
      totalDebitCents: 1250 + 99_999,
      totalCreditCents: 701,
    });
    expectSameAsInput(await readWithAchcli(built.bytes), input);
  });

  test('CCD batches (a credits-only disbursement and a debits-only collection) beside a PPD batch of another organization', async () => {
    const input = header(
      [
        batch({
          serviceClassCode: 220,
          secCode: 'CCD',
          companyEntryDescription: 'SETTLEMENT',
          effectiveEntryDate: '2026-11-30',
          entries: [
            entry({
              traceSequence: 10,
              transactionCode: 22,
              amountCents: 5_000_000,
              individualName: 'ACME GAMING LLC',
              individualIdentification: 'tr_1',
            }),
          ],
        }),
        batch({
          serviceClassCode: 225,
          secCode: 'CCD',
          companyEntryDescription: 'SETTLEMENT',
          entries: [entry({ traceSequence: 11, transactionCode: 27, amountCents: 42, individualName: 'ACME GAMING LLC' })],
        }),
        batch({
          companyName: 'OTHER ORG',
          companyIdentification: '9876543210',
          entries: [entry({ traceSequence: 12 }), entry({ traceSequence: 13, transactionCode: 22 })],
        }),
      ],
      { fileIdModifier: '7', creationTime: '16:45' },
    );
    const built = buildNachaFile(input);
    expectBlocked(built.bytes);
    expectSameAsInput(await readWithAchcli(built.bytes), input);
  });

  test('a file of 25 entries takes 3 blocks, the file control counting them', async () => {
    const entries = Array.from({ length: 25 }, (_, i) => entry({ traceSequence: i + 1, amountCents: 100 + i }));
    const input = header([batch({ entries })]);
    const built = buildNachaFile(input);
    expectBlocked(built.bytes);
    // 1 header + 1 batch header + 25 entries + 1 batch control + 1 file control = 29 records → 3 blocks.
    expect(built.summary.blockCount).toBe(3);
    const moov = await readWithAchcli(built.bytes);
    expect(moov.fileControl.blockCount).toBe(3);
    expectSameAsInput(moov, input);
  });

  test('random valid files read back the same, and achcli writes them back byte for byte (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fileInput(), async (input) => {
        const { bytes } = buildNachaFile(input);
        const moov = await readWithAchcli(bytes);
        expectSameAsInput(moov, input);
        expect(await writeWithAchcli(moov)).toBe(bytes.toString('latin1'));
      }),
      { numRuns: 40 },
    );
  });
});

describe('SPEC §24 NACHA files refuse rows they cannot write truthfully', () => {
  const ok = () => header([batch({ entries: [entry({ traceSequence: 1 })] })]);
  test.each([
    [
      'a routing number whose check digit is wrong',
      { batches: [batch({ entries: [entry({ traceSequence: 1, rdfiRouting: '021000022' })] })] },
      'batches[0].entries[0].rdfiRouting',
    ],
    ['an ODFI routing number that is not one', { odfiRouting: '12345678' }, 'odfiRouting'],
    ['an immediate origin not 10 characters', { immediateOrigin: '123456789' }, 'immediateOrigin'],
    ['a file id modifier past 9', { fileIdModifier: 'a' }, 'fileIdModifier'],
    [
      'an account number of 18 characters',
      { batches: [batch({ entries: [entry({ traceSequence: 1, accountNumber: '1'.repeat(18) })] })] },
      'batches[0].entries[0].accountNumber',
    ],
    [
      'an amount of 0',
      { batches: [batch({ entries: [entry({ traceSequence: 1, amountCents: 0 })] })] },
      'batches[0].entries[0].amountCents',
    ],
    [
      'an amount of 11 digits',
      { batches: [batch({ entries: [entry({ traceSequence: 1, amountCents: 10_000_000_000 })] })] },
      'batches[0].entries[0].amountCents',
    ],
    [
      'a fraction of a cent',
      { batches: [batch({ entries: [entry({ traceSequence: 1, amountCents: 1.5 })] })] },
      'batches[0].entries[0].amountCents',
    ],
    [
      'a debit in a credits-only batch',
      { batches: [batch({ serviceClassCode: 220, entries: [entry({ traceSequence: 1, transactionCode: 27 })] })] },
      'batches[0].entries[0].transactionCode',
    ],
    [
      'a prenote code',
      { batches: [batch({ entries: [entry({ traceSequence: 1, transactionCode: 23 as 22 })] })] },
      'batches[0].entries[0].transactionCode',
    ],
    [
      'a trace sequence used twice',
      { batches: [batch({ entries: [entry({ traceSequence: 5 })] }), batch({ entries: [entry({ traceSequence: 5 })] })] },
      'batches[1].entries[0].traceSequence',
    ],
    [
      'a trace sequence of 8 digits',
      { batches: [batch({ entries: [entry({ traceSequence: 10_000_000 })] })] },
      'batches[0].entries[0].traceSequence',
    ],
    [
      'a name that is not ASCII',
      { batches: [batch({ entries: [entry({ traceSequence: 1, individualName: 'JOSÉ' })] })] },
      'batches[0].entries[0].individualName',
    ],
    [
      'a blank company name',
      { batches: [batch({ companyName: '   ', entries: [entry({ traceSequence: 1 })] })] },
      'batches[0].companyName',
    ],
    ['an empty batch', { batches: [batch({ entries: [] })] }, 'batches[0].entries'],
    ['no batch', { batches: [] }, 'batches'],
    [
      'an effective date that is not a date',
      { batches: [batch({ effectiveEntryDate: '2026-13-01', entries: [entry({ traceSequence: 1 })] })] },
      'batches[0].effectiveEntryDate',
    ],
  ] as const)('%s', (_, overrides, field) => {
    expect(() => buildNachaFile({ ...ok(), ...(overrides as Partial<NachaFileInput>) })).toThrow(
      expect.objectContaining({ name: NachaInputError.name, field }) as Error,
    );
  });

  test('a batch whose debits pass 12 digits of cents is refused, not wrapped', () => {
    const entries = Array.from({ length: 101 }, (_, i) => entry({ traceSequence: i, amountCents: 9_999_999_999 }));
    expect(() => buildNachaFile(header([batch({ entries })]))).toThrow(/at most 999999999999 cents/);
  });

  test('file id modifiers run A–Z then 0–9, and there is no 37th', () => {
    expect(FILE_ID_MODIFIERS).toHaveLength(36);
    expect([0, 25, 26, 35].map(fileIdModifierOf)).toEqual(['A', 'Z', '0', '9']);
    expect(() => fileIdModifierOf(36)).toThrow(/36 file id modifiers/);
  });

  test('routing check digits follow the 3-7-1 weights', () => {
    expect(['021000021', '011000015', '091000019', '122105278'].every(isRoutingNumber)).toBe(true);
    expect(isRoutingNumber('021000020')).toBe(false);
    expect(routingCheckDigit('02100002')).toBe(1);
  });
});

function routingArb(): fc.Arbitrary<string> {
  return fc.stringMatching(/^\d{8}$/).map((dfi) => dfi + String(routingCheckDigit(dfi)));
}

/** Printable ASCII without leading blanks (NACHA fields are left-justified: a leading blank is not kept apart from padding). */
function textArb(min: number, max: number): fc.Arbitrary<string> {
  return fc.stringMatching(new RegExp(`^[A-Za-z0-9][ -~]{${min - 1},${max - 1}}$`)).map((s) => s.trimEnd().padEnd(min, 'X'));
}

function fileInput(): fc.Arbitrary<NachaFileInput> {
  const entryArb = fc.record({
    transactionCode: fc.constantFrom(22, 27, 32, 37),
    rdfiRouting: routingArb(),
    accountNumber: fc.stringMatching(/^[0-9A-Z]{4,17}$/),
    amountCents: fc.integer({ min: 1, max: 9_999_999_999 }),
    individualIdentification: textArb(1, 15),
    individualName: textArb(1, 22),
    traceSequence: fc.constant(0),
  });
  const batchArb = fc.record({
    secCode: fc.constantFrom('PPD', 'CCD'),
    companyName: textArb(1, 16),
    companyIdentification: fc.stringMatching(/^[0-9]{10}$/),
    companyEntryDescription: fc.constantFrom('PAYMENT', 'SETTLEMENT', 'REFUND'),
    effectiveEntryDate: fc
      .date({ min: new Date('2026-01-01'), max: new Date('2030-12-31'), noInvalidDate: true })
      .map((d) => d.toISOString().slice(0, 10)),
    entries: fc.array(entryArb, { minLength: 1, maxLength: 12 }),
  });
  return fc.array(batchArb, { minLength: 1, maxLength: 4 }).chain((batches) =>
    fc
      .shuffledSubarray(
        Array.from({ length: 60 }, (_, i) => i * 3 + 1),
        { minLength: 60, maxLength: 60 },
      )
      .map((traces) => {
        let next = 0;
        const numbered = batches.map((b) => ({
          ...b,
          serviceClassCode: 200 as const,
          entries: b.entries.map((e) => ({ ...e, traceSequence: traces[next++]! })),
        }));
        return header(numbered, { fileIdModifier: FILE_ID_MODIFIERS[numbered.length]! });
      }),
  );
}
