import { Filters, keysetPage, type ListPage, type PageRequest } from '../db/paging';
import type { Queryable } from '../db/pool';
import type { AccountType, BankAccount } from './schemas';

/** SQL owned by bank accounts (SPEC §24): bank_accounts, operator_bank_accounts, organization_ach. */

export interface BankAccountRow {
  id: string;
  organization_id: string;
  user_id: string;
  routing_number: string;
  bank_name: string | null;
  last4: string;
  account_type: AccountType;
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  created_at: Date;
}

/** Every column but the sealed number and its fingerprint: what reads of the API need, named (never `*`). */
const PUBLIC_COLUMNS =
  'b.id, b.organization_id, b.user_id, b.routing_number, b.bank_name, b.last4, b.account_type, b.status, b.disabled_reason, b.created_at';

export function renderBankAccount(row: BankAccountRow): BankAccount {
  return {
    id: row.id,
    user_id: row.user_id,
    bank: row.bank_name,
    routing_number: row.routing_number,
    last4: row.last4,
    account_type: row.account_type,
    status: row.status,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at.toISOString(),
  };
}

/**
 * The user's bank account with this fingerprint: a new row, or the one already there (the same account
 * authorized again is the same bank account, with its status and type as they are; docs/ach.md).
 */
export async function upsertBankAccount(
  db: Queryable,
  input: Omit<BankAccountRow, 'status' | 'disabled_reason'> & { accountNumberSealed: string; fingerprint: string },
): Promise<{ row: BankAccountRow; created: boolean }> {
  const inserted = await db.query<BankAccountRow>(
    `INSERT INTO bank_accounts AS b (id, organization_id, user_id, routing_number, bank_name, last4, account_type,
                                account_number_sealed, account_fingerprint, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
     ON CONFLICT (organization_id, user_id, account_fingerprint) DO NOTHING
     RETURNING ${PUBLIC_COLUMNS}`,
    [
      input.id,
      input.organization_id,
      input.user_id,
      input.routing_number,
      input.bank_name,
      input.last4,
      input.account_type,
      input.accountNumberSealed,
      input.fingerprint,
      input.created_at,
    ],
  );
  if (inserted.rows[0]) return { row: inserted.rows[0], created: true };
  const { rows } = await db.query<BankAccountRow>(
    `SELECT ${PUBLIC_COLUMNS} FROM bank_accounts b WHERE b.organization_id = $1 AND b.user_id = $2 AND b.account_fingerprint = $3`,
    [input.organization_id, input.user_id, input.fingerprint],
  );
  if (!rows[0]) throw new Error('bank account: the conflicting row is gone');
  return { row: rows[0], created: false };
}

export async function listBankAccountsOfUser(
  db: Queryable,
  organizationId: string,
  userId: string,
  page: PageRequest,
): Promise<ListPage<BankAccount>> {
  const found = await keysetPage<BankAccountRow>(db, {
    select: PUBLIC_COLUMNS,
    from: 'bank_accounts b',
    table: 'bank_accounts',
    alias: 'b',
    filters: new Filters('b.organization_id', organizationId).add('b.user_id = ?', userId),
    page,
  });
  return { ...found, data: found.data.map(renderBankAccount) };
}

/** Whether a bank account is disabled now (a manual intent approved later re-checks its bank account). */
export async function bankAccountDisabled(db: Queryable, bankAccountId: string): Promise<boolean> {
  const { rows } = await db.query<{ status: string }>('SELECT status FROM bank_accounts WHERE id = $1', [bankAccountId]);
  return rows[0]?.status === 'disabled';
}

/**
 * Disables a bank account (SPEC §25: returns R02/R03/R04 close it). An active one only; answers the row, or
 * null when there is no such active bank account.
 */
export async function disableBankAccount(
  db: Queryable,
  input: { bankAccountId: string; reason: string; now: Date },
): Promise<BankAccountRow | null> {
  return (await disableBankAccounts(db, [input], input.now))[0] ?? null;
}

/**
 * disableBankAccount of many in one statement: each active one disabled with its reason (the first given for a
 * bank account named twice); answers those it disabled, a bank account already disabled is not among them.
 */
export async function disableBankAccounts(
  db: Queryable,
  inputs: ReadonlyArray<{ bankAccountId: string; reason: string }>,
  now: Date,
): Promise<BankAccountRow[]> {
  const reasons = new Map<string, string>();
  for (const input of inputs) if (!reasons.has(input.bankAccountId)) reasons.set(input.bankAccountId, input.reason);
  if (reasons.size === 0) return [];
  const { rows } = await db.query<BankAccountRow>(
    `UPDATE bank_accounts b SET status = 'disabled', disabled_reason = d.reason, updated_at = $3
       FROM unnest($1::text[], $2::text[]) AS d (id, reason)
      WHERE b.id = d.id AND b.status = 'active' RETURNING ${PUBLIC_COLUMNS}`,
    [[...reasons.keys()], [...reasons.values()], now],
  );
  return rows;
}

export interface OperatorBankAccountRow {
  account_id: string;
  routing_number: string;
  last4: string;
  account_type: AccountType;
  updated_at: Date;
}

/** Sets (or replaces) the operator's bank account behind a settlement account; null: no such account. */
export async function setOperatorBankAccount(
  db: Queryable,
  input: OperatorBankAccountRow & { accountNumberSealed: string },
): Promise<OperatorBankAccountRow | null> {
  const { rows } = await db.query<OperatorBankAccountRow>(
    `INSERT INTO operator_bank_accounts (account_id, routing_number, last4, account_type, account_number_sealed, updated_at)
     SELECT id, $2, $3, $4, $5, $6 FROM accounts WHERE id = $1
     ON CONFLICT (account_id) DO UPDATE SET routing_number = EXCLUDED.routing_number, last4 = EXCLUDED.last4,
       account_type = EXCLUDED.account_type, account_number_sealed = EXCLUDED.account_number_sealed, updated_at = EXCLUDED.updated_at
     RETURNING account_id, routing_number, last4, account_type, updated_at`,
    [input.account_id, input.routing_number, input.last4, input.account_type, input.accountNumberSealed, input.updated_at],
  );
  return rows[0] ?? null;
}

export interface OrganizationAch {
  organization_id: string;
  company_id: string;
  company_name: string;
  updated_at: Date;
}

/** Sets (or replaces) the organization's ACH originator identity; null: no such organization. */
export async function setOrganizationAch(db: Queryable, input: OrganizationAch): Promise<OrganizationAch | null> {
  const { rows } = await db.query<OrganizationAch>(
    `INSERT INTO organization_ach (organization_id, company_id, company_name, updated_at)
     SELECT id, $2, $3, $4 FROM organizations WHERE id = $1
     ON CONFLICT (organization_id) DO UPDATE SET company_id = EXCLUDED.company_id, company_name = EXCLUDED.company_name,
       updated_at = EXCLUDED.updated_at
     RETURNING organization_id, company_id, company_name, updated_at`,
    [input.organization_id, input.company_id, input.company_name, input.updated_at],
  );
  return rows[0] ?? null;
}
