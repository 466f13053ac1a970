import { writeWithAchcli } from './achcli';

/**
 * SPEC §25: the bank's return and notification-of-change files, written by moov-io/ach's achcli from its JSON
 * (never by the code under test). Used by the suites (through ./bankReturns) and by the simulation's SFTP bank
 * (sim/bank.ts), so it imports nothing of the service.
 */

/**
 * One item of a bank file: an R code returns the entry of `trace` (`credit`: a credit of ours), a C code corrects
 * it with `corrected`. `accountNumber` is the entry's DFI account number (a placeholder unless given); `sec` the
 * batch a return goes in (a transfer's entry is CCD).
 */
export interface BankItem {
  trace: string;
  code: string;
  amount?: number;
  corrected?: string;
  credit?: boolean;
  accountNumber?: string;
  sec?: 'PPD' | 'CCD';
}

let fileCounter = 0;

/**
 * A return / NOC file as the bank sends it to `odfi` (our routing number), written by achcli from moov-io/ach's
 * JSON: the returns in a batch per SEC code (PPD first), the notifications of change in a COR batch after them.
 */
export async function bankFile(odfi: string, items: BankItem[]): Promise<string> {
  fileCounter += 1;
  const entry = (item: BankItem, i: number) => {
    const traceNumber = `02100002${String((fileCounter * 100 + i + 1) % 10_000_000).padStart(7, '0')}`;
    const base = {
      RDFIIdentification: odfi.slice(0, 8),
      checkDigit: odfi[8],
      DFIAccountNumber: item.accountNumber ?? '123456789',
      identificationNumber: 'RETURN',
      individualName: 'TEST USER',
      addendaRecordIndicator: 1,
      traceNumber,
      // The return of a checking credit is 21, of a checking debit 26.
      transactionCode: item.credit ? 21 : 26,
    };
    const addenda = { originalTrace: item.trace, originalDFI: '11000000', traceNumber };
    return item.code.startsWith('C')
      ? {
          ...base,
          amount: 0,
          category: 'NOC',
          addenda98: { typeCode: '98', changeCode: item.code, correctedData: item.corrected, ...addenda },
        }
      : {
          ...base,
          amount: item.amount ?? 100,
          category: 'Return',
          addenda99: { typeCode: '99', returnCode: item.code, dateOfDeath: '', addendaInformation: '', ...addenda },
        };
  };
  // 225 debits only (returns of debits, notifications), 220 credits only, 200 mixed.
  const classOf = (batchItems: BankItem[]) => (batchItems.every((i) => !i.credit) ? 225 : batchItems.every((i) => i.credit) ? 220 : 200);
  const groups = [
    ...(['PPD', 'CCD'] as const).map((sec) => ({ sec, items: items.filter((i) => i.code.startsWith('R') && (i.sec ?? 'PPD') === sec) })),
    { sec: 'COR', items: items.filter((i) => i.code.startsWith('C')) },
  ].filter((group) => group.items.length > 0);
  // Trace numbers run on across the batches: each entry's is unique in the file.
  let offset = 0;
  const batches = groups.map((group, index) => {
    const entryDetails = group.items.map((item, i) => entry(item, offset + i));
    offset += group.items.length;
    return {
      batchHeader: {
        serviceClassCode: classOf(group.items),
        companyName: 'TEST COMPANY',
        companyIdentification: '1234567890',
        standardEntryClassCode: group.sec,
        companyEntryDescription: 'PAYMENT',
        effectiveEntryDate: group.sec === 'COR' ? '' : '261130',
        originatorStatusCode: 1,
        ODFIIdentification: '11000000',
        batchNumber: index + 1,
      },
      entryDetails,
      batchControl: { serviceClassCode: classOf(group.items) },
    };
  });
  return writeWithAchcli({
    fileHeader: {
      immediateDestination: odfi,
      immediateOrigin: '021000021',
      fileCreationDate: '261130',
      fileCreationTime: String(1000 + fileCounter).slice(-4),
      fileIDModifier: 'A',
      immediateDestinationName: 'TEST ODFI',
      immediateOriginName: 'FEDERAL RESERVE BANK',
    },
    batches,
    fileControl: {},
  });
}
