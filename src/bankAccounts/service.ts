import type { Config } from '../config';
import type { Queryable } from '../db/pool';
import { newId } from '../ids';
import type { Op } from '../services';
import { bankName } from '../tokens/contract';
import { setOperatorBankAccount, upsertBankAccount, type BankAccountRow, type OperatorBankAccountRow } from './repo';
import type { AccountType } from './schemas';
import { accountFingerprint, openAccountNumber, sealAccountNumber } from './sealing';

/** Bank accounts (SPEC §24): made from a spent bank token, reused for the same account of the same user. */

export interface SealedBankToken {
  id: string;
  user_id: string;
  routing_number: string;
  account_type: AccountType;
  account_number_sealed: string;
}

/**
 * The user's bank account for a bank token being spent by POST /authorize: the number is opened from the
 * token's seal and sealed anew for its own row (each seal is bound to where it rests). The same routing and
 * number for the same user is the bank account already there (docs/ach.md).
 */
export async function bankAccountFromToken(op: Op, token: SealedBankToken): Promise<BankAccountRow> {
  const config = op.deps.config;
  const accountNumber = openAccountNumber(config, token.account_number_sealed, { table: 'payment_tokens', id: token.id });
  const id = newId('ba');
  const { row } = await upsertBankAccount(op.db, {
    id,
    organization_id: op.organizationId,
    user_id: token.user_id,
    routing_number: token.routing_number,
    bank_name: bankName(token.routing_number),
    last4: accountNumber.slice(-4),
    account_type: token.account_type,
    created_at: op.now,
    accountNumberSealed: sealAccountNumber(config, accountNumber, { table: 'bank_accounts', id }),
    fingerprint: accountFingerprint(config, token.routing_number, accountNumber),
  });
  return row;
}

/**
 * Sets (or replaces) the operator's bank account behind settlement account `accountId` (SPEC §24: its transfers
 * become CCD entries): the number sealed with BANK_DATA_KEY, bound to its row, and only its last four kept in the
 * clear. Null: no such account. `admin account bank-account set` and the tests store it through here.
 */
export function storeOperatorBankAccount(
  db: Queryable,
  config: Config,
  input: { accountId: string; routingNumber: string; number: string; accountType: AccountType; now: Date },
): Promise<OperatorBankAccountRow | null> {
  return setOperatorBankAccount(db, {
    account_id: input.accountId,
    routing_number: input.routingNumber,
    last4: input.number.slice(-4),
    account_type: input.accountType,
    updated_at: input.now,
    accountNumberSealed: sealAccountNumber(config, input.number, { table: 'operator_bank_accounts', id: input.accountId }),
  });
}
