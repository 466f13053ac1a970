import type { Queryable } from '../db/pool';
import type { AccountType } from './schemas';
import { openAccountNumber, type BankDataConfig } from './sealing';

/**
 * What the ACH file builder (worker side, SPEC §24) reads to write entries: the full routing and account
 * numbers, opened from their seals. Nothing else opens them. What this returns must go only into the file
 * bytes (themselves sealed at rest): never into a log line, an event, an error or a metric.
 */

export interface AchAccountDetails {
  routing_number: string;
  account_number: string;
  account_type: AccountType;
}

/** Bounded like every batch read: one ACH file's entries are read in pages of at most this many accounts. */
export const ACH_DETAILS_LIMITS = { idsPerCallMax: 10_000 };

/**
 * The distinct ids, at most idsPerCallMax of them: the bound is on what is read (one row per account), so a window
 * whose 100,000 entries name a few accounts is one read (bench/achLoad.ts found it refused when the bound counted
 * entries).
 */
function distinctWithinLimit(ids: readonly string[]): string[] {
  const distinct = [...new Set(ids)];
  if (distinct.length > ACH_DETAILS_LIMITS.idsPerCallMax) throw new Error(`at most ${ACH_DETAILS_LIMITS.idsPerCallMax} ids per call`);
  return distinct;
}

/** Users' bank accounts by id (ba_…); an id with no bank account is absent from the map. */
export async function openBankAccounts(
  db: Queryable,
  config: BankDataConfig,
  bankAccountIds: readonly string[],
): Promise<Map<string, AchAccountDetails>> {
  const { rows } = await db.query<{ id: string; routing_number: string; account_type: AccountType; account_number_sealed: string }>(
    'SELECT id, routing_number, account_type, account_number_sealed FROM bank_accounts WHERE id = ANY($1::text[])',
    [distinctWithinLimit(bankAccountIds)],
  );
  return new Map(
    rows.map((row) => [
      row.id,
      {
        routing_number: row.routing_number,
        account_type: row.account_type,
        account_number: openAccountNumber(config, row.account_number_sealed, { table: 'bank_accounts', id: row.id }),
      },
    ]),
  );
}

/** The operator's bank accounts by settlement account id (account_…); one without is absent from the map. */
export async function openOperatorBankAccounts(
  db: Queryable,
  config: BankDataConfig,
  accountIds: readonly string[],
): Promise<Map<string, AchAccountDetails>> {
  const { rows } = await db.query<{ account_id: string; routing_number: string; account_type: AccountType; account_number_sealed: string }>(
    'SELECT account_id, routing_number, account_type, account_number_sealed FROM operator_bank_accounts WHERE account_id = ANY($1::text[])',
    [distinctWithinLimit(accountIds)],
  );
  return new Map(
    rows.map((row) => [
      row.account_id,
      {
        routing_number: row.routing_number,
        account_type: row.account_type,
        account_number: openAccountNumber(config, row.account_number_sealed, { table: 'operator_bank_accounts', id: row.account_id }),
      },
    ]),
  );
}

/** The originator identity of each organization's ACH batches (CLI `org ach set`); one without is absent. */
export async function organizationAchOf(
  db: Queryable,
  organizationIds: readonly string[],
): Promise<Map<string, { company_id: string; company_name: string }>> {
  const { rows } = await db.query<{ organization_id: string; company_id: string; company_name: string }>(
    'SELECT organization_id, company_id, company_name FROM organization_ach WHERE organization_id = ANY($1::text[])',
    [distinctWithinLimit(organizationIds)],
  );
  return new Map(rows.map((row) => [row.organization_id, { company_id: row.company_id, company_name: row.company_name }]));
}
