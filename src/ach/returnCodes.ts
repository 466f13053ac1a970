/**
 * NACHA return reason codes (addenda 99) and change codes (addenda 98) and what SPEC §25 does with each. A
 * code not listed here is still applied (a dispute, counted in the overall rate) under the title "Return
 * R<nn>": the bank's code is the fact, the title only explains it.
 */

export const RETURN_TITLES: Readonly<Record<string, string>> = {
  R01: 'Insufficient Funds',
  R02: 'Account Closed',
  R03: 'No Account/Unable to Locate Account',
  R04: 'Invalid Account Number Structure',
  R05: 'Unauthorized Debit to Consumer Account Using Corporate SEC Code',
  R06: 'Returned per ODFI Request',
  R07: 'Authorization Revoked by Customer',
  R08: 'Payment Stopped',
  R09: 'Uncollected Funds',
  R10: 'Customer Advises Originator is Not Known to Receiver and/or Originator is Not Authorized by Receiver to Debit Receiver Account',
  R11: 'Customer Advises Entry Not in Accordance with the Terms of the Authorization',
  R12: 'Account Sold to Another DFI',
  R13: 'Invalid ACH Routing Number',
  R14: 'Representative Payee Deceased or Unable to Continue in That Capacity',
  R15: 'Beneficiary or Account Holder (Other Than a Representative Payee) Deceased',
  R16: 'Account Frozen/Entry Returned per OFAC Instruction',
  R17: 'File Record Edit Criteria/Entry with Invalid Account Number Initiated Under Questionable Circumstances',
  R20: 'Non-Transaction Account',
  R21: 'Invalid Company Identification',
  R22: 'Invalid Individual ID Number',
  R23: 'Credit Entry Refused by Receiver',
  R24: 'Duplicate Entry',
  R29: 'Corporate Customer Advises Not Authorized',
  R31: 'Permissible Return Entry (CCD and CTX only)',
  R33: 'Return of XCK Entry',
  R51: 'Item Related to RCK Entry is Ineligible or RCK Entry is Improper',
};

/** Return codes that are the Rules' "unauthorized" returns: counted against the 0.5 % threshold; they suspend the user. */
export const UNAUTHORIZED_CODES: ReadonlySet<string> = new Set(['R05', 'R07', 'R10', 'R11', 'R29', 'R51']);
/** "Administrative" returns (3 %): the account is closed, absent or malformed; they disable the bank account. */
export const ADMINISTRATIVE_CODES: ReadonlySet<string> = new Set(['R02', 'R03', 'R04']);

export function returnTitle(code: string): string {
  return knownReturnTitle(code) ?? `Return ${code}`;
}

/** The code's NACHA title when it is a return code listed here; null for anything else (another network's code). */
export function knownReturnTitle(code: string): string | null {
  return Object.hasOwn(RETURN_TITLES, code) ? RETURN_TITLES[code]! : null;
}

/** The notifications of change SPEC §25 applies; the others (C08 onward, IAT and refused NOCs) are exceptions. */
export const CHANGE_CODES: ReadonlySet<string> = new Set(['C01', 'C02', 'C03', 'C05', 'C06', 'C07']);

export interface Correction {
  routingNumber?: string;
  accountNumber?: string;
  accountType?: 'checking' | 'savings';
}

const typeOfCode = (code: string): 'checking' | 'savings' | null =>
  ['22', '23', '27', '28'].includes(code) ? 'checking' : ['32', '33', '37', '38'].includes(code) ? 'savings' : null;

/**
 * The corrected data of a change code, at the Rules' positions (addenda 98, 29 characters): C01 account number
 * (1–17); C02 routing (1–9); C03 routing (1–9), account (13–29); C05 transaction code (1–2); C06 account
 * (1–17), transaction code (21–22); C07 routing (1–9), account (10–26), transaction code (27–28). Null when the
 * data does not read as what its code says.
 */
export function correctionOf(code: string, data: string): Correction | null {
  const account = (from: number, to: number) => data.slice(from - 1, to).trim();
  const routing = data.slice(0, 9);
  const okAccount = (value: string) => /^[A-Za-z0-9]{4,17}$/.test(value);
  const okRouting = /^[0-9]{9}$/.test(routing);
  let correction: Correction | null = null;
  if (code === 'C01') correction = { accountNumber: account(1, 17) };
  else if (code === 'C02') correction = okRouting ? { routingNumber: routing } : null;
  else if (code === 'C03') correction = okRouting ? { routingNumber: routing, accountNumber: account(13, 29) } : null;
  else if (code === 'C05') correction = withType({}, data.slice(0, 2));
  else if (code === 'C06') correction = withType({ accountNumber: account(1, 17) }, data.slice(20, 22));
  else if (code === 'C07')
    correction = okRouting ? withType({ routingNumber: routing, accountNumber: account(10, 26) }, data.slice(26, 28)) : null;
  if (!correction || (correction.accountNumber !== undefined && !okAccount(correction.accountNumber))) return null;
  return correction;
}

function withType(correction: Correction, transactionCode: string): Correction | null {
  const type = typeOfCode(transactionCode);
  return type ? { ...correction, accountType: type } : null;
}

/** The NACHA titles of the change codes (addenda 98), for people reading a notification of change. */
export const CHANGE_TITLES: Readonly<Record<string, string>> = {
  C01: 'Incorrect DFI Account Number',
  C02: 'Incorrect Routing Number',
  C03: 'Incorrect Routing Number and Incorrect DFI Account Number',
  C04: 'Incorrect Individual Name/Receiving Company Name',
  C05: 'Incorrect Transaction Code',
  C06: 'Incorrect DFI Account Number and Incorrect Transaction Code',
  C07: 'Incorrect Routing Number, Incorrect DFI Account Number, and Incorrect Transaction Code',
  C08: 'Incorrect Receiving DFI Identification (IAT only)',
  C09: 'Incorrect Individual Identification Number',
  C13: 'Addenda Format Error',
  C14: 'Incorrect SEC Code for Outbound International Payment',
};

/** The NACHA title of a return or change code ("Return R<nn>" / "Change C<nn>" for one not listed). */
export function codeTitle(code: string): string {
  return code.startsWith('C') ? (CHANGE_TITLES[code] ?? `Change ${code}`) : returnTitle(code);
}
