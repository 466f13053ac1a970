import { Filters, keysetPage, type ListPage, type PageRequest } from '../db/paging';
import pg, { type QueryResult } from 'pg';
import type { Queryable } from '../db/pool';
import type { Account } from './schemas';
import { rowOf } from '../assert';

/** Reads of settlement accounts and their balances (maintained by the ledger's triggers, schema.sql). */

interface AccountRow {
  id: string;
  name: string;
  created_at: Date;
  pending_cents: number;
  available_cents: number;
  in_transfer_cents: number;
}

const ACCOUNT_COLUMNS = `a.id, a.name, a.created_at, coalesce(b.pending_cents, 0) AS pending_cents,
  coalesce(b.available_cents, 0) AS available_cents, coalesce(b.in_transfer_cents, 0) AS in_transfer_cents`;
const ACCOUNT_FROM = 'accounts a LEFT JOIN account_balance_totals b ON b.account_id = a.id';

function renderAccount(row: AccountRow): Account {
  return {
    id: row.id,
    type: 'settlement',
    name: row.name,
    currency: 'USD',
    balances: { pending: row.pending_cents, available: row.available_cents, in_transfer: row.in_transfer_cents },
    created_at: row.created_at.toISOString(),
  };
}

export async function getAccount(db: Queryable, organizationId: string, accountId: string): Promise<Account | null> {
  const { rows } = await db.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM ${ACCOUNT_FROM} WHERE a.id = $1 AND a.organization_id = $2`, [
    accountId,
    organizationId,
  ]);
  return rows[0] ? renderAccount(rows[0]) : null;
}

export async function listAccounts(db: Queryable, organizationId: string, page: PageRequest): Promise<ListPage<Account>> {
  const found = await keysetPage<AccountRow>(db, {
    select: ACCOUNT_COLUMNS,
    from: ACCOUNT_FROM,
    table: 'accounts',
    alias: 'a',
    filters: new Filters('a.organization_id', organizationId),
    page,
  });
  return { ...found, data: found.data.map(renderAccount) };
}

/** SPEC §7: account_id optional with one account, required with several; unknown ones are resource_missing. */
export async function resolveAccountId(
  db: Queryable,
  organizationId: string,
  accountId: string | undefined,
): Promise<{ ok: true; accountId: string } | { ok: false; reason: 'missing' | 'required' }> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM accounts WHERE organization_id = $1 AND ($2::text IS NULL OR id = $2) ORDER BY id LIMIT 2`,
    [organizationId, accountId ?? null],
  );
  if (rows.length === 1) return { ok: true, accountId: rowOf(rows, 'rows.length is 1').id };
  return { ok: false, reason: accountId !== undefined ? 'missing' : 'required' };
}

/** What an intent's decision needs to know about its user, account and bank account (SPEC §6, §7, §24). */
export interface IntentParties {
  /** null: no such user in the organization. */
  userStatus: string | null;
  account: { ok: true; accountId: string } | { ok: false; reason: 'missing' | 'required' };
  /**
   * The named bank account, else the user's newest active one; `id: null`: none. `missing`: the named one is
   * not the organization's; `other_user`: it is another user's.
   */
  bankAccount: { ok: true; id: string | null; disabled: boolean } | { ok: false; reason: 'missing' | 'other_user' };
}

/** What an intent asks of its parties; `bank_account_id: null` asks for none at all (a card authorization). */
export interface IntentPartiesRequest {
  user_id: string;
  account_id?: string | undefined;
  bank_account_id?: string | null | undefined;
}

/**
 * SPEC §7's rule, given the organization's accounts that match the body (`accountId` itself when it exists,
 * else up to two of all): exactly one is the intent's; none named is missing; several unnamed is required.
 */
function intentAccountOf(accountId: string | undefined, matchingIds: readonly string[]): IntentParties['account'] {
  if (matchingIds.length === 1) return { ok: true, accountId: matchingIds[0]! };
  return { ok: false, reason: accountId !== undefined ? 'missing' : 'required' };
}

interface NamedBankAccount {
  user_id: string;
  status: 'active' | 'disabled';
}

/** SPEC §24's rule: the named bank account must be the intent's user's; none named is the user's newest active one. */
function intentBankAccountOf(
  intent: IntentPartiesRequest,
  named: Record<string, NamedBankAccount>,
  defaults: Record<string, string>,
): IntentParties['bankAccount'] {
  if (intent.bank_account_id === null) return { ok: true, id: null, disabled: false };
  if (intent.bank_account_id === undefined) return { ok: true, id: defaults[intent.user_id] ?? null, disabled: false };
  if (!Object.hasOwn(named, intent.bank_account_id)) return { ok: false, reason: 'missing' };
  const found = named[intent.bank_account_id]!;
  if (found.user_id !== intent.user_id) return { ok: false, reason: 'other_user' };
  return { ok: true, id: intent.bank_account_id, disabled: found.status === 'disabled' };
}

/** The row intentPartiesSql answers. */
interface PartiesRow {
  users: Record<string, string>;
  named_ids: string[];
  default_ids: string[];
  named_bank: Record<string, NamedBankAccount>;
  default_bank: Record<string, string>;
}

/**
 * The statement that reads what intents need of their parties, in one row (PartiesRow); its inputs are SQL
 * expressions (parameter references or literals): the organization, the users named, the accounts named and the
 * bank accounts named (text[] each).
 */
function intentPartiesSql(refs: { organizationId: string; userIds: string; accountIds: string; bankAccountIds: string }): string {
  const { organizationId, userIds, accountIds, bankAccountIds } = refs;
  return `SELECT (SELECT coalesce(jsonb_object_agg(id, status), '{}') FROM users WHERE organization_id = ${organizationId} AND id = ANY(${userIds})) AS users,
            ARRAY(SELECT id FROM accounts WHERE organization_id = ${organizationId} AND id = ANY(${accountIds})) AS named_ids,
            ARRAY(SELECT id FROM accounts WHERE organization_id = ${organizationId} ORDER BY id LIMIT 2) AS default_ids,
            (SELECT coalesce(jsonb_object_agg(id, jsonb_build_object('user_id', user_id, 'status', status)), '{}')
               FROM bank_accounts WHERE organization_id = ${organizationId} AND id = ANY(${bankAccountIds})) AS named_bank,
            (SELECT coalesce(jsonb_object_agg(u.id, b.id), '{}')
               FROM unnest(${userIds}) AS u (id)
               CROSS JOIN LATERAL (SELECT id FROM bank_accounts
                                    WHERE user_id = u.id AND organization_id = ${organizationId} AND status = 'active'
                                    ORDER BY created_at DESC, id DESC LIMIT 1) b) AS default_bank`;
}

/** intentPartiesSql's inputs for these intents: the users, accounts and bank accounts they name, each once. */
function partiesInputs(intents: readonly IntentPartiesRequest[]): { userIds: string[]; accountIds: string[]; bankAccountIds: string[] } {
  return {
    userIds: [...new Set(intents.map((intent) => intent.user_id))],
    accountIds: [...new Set(intents.flatMap((intent) => (intent.account_id === undefined ? [] : [intent.account_id])))],
    bankAccountIds: [...new Set(intents.flatMap((intent) => (typeof intent.bank_account_id === 'string' ? [intent.bank_account_id] : [])))],
  };
}

/** Each intent's parties, from intentPartiesSql's row. */
function partiesOf(row: PartiesRow, intents: readonly IntentPartiesRequest[]): IntentParties[] {
  const existing = new Set(row.named_ids);
  return intents.map((intent) => ({
    userStatus: Object.hasOwn(row.users, intent.user_id) ? row.users[intent.user_id]! : null,
    account: intentAccountOf(
      intent.account_id,
      intent.account_id === undefined ? row.default_ids : existing.has(intent.account_id) ? [intent.account_id] : [],
    ),
    bankAccount: intentBankAccountOf(intent, row.named_bank, row.default_bank),
  }));
}

/**
 * The user's status, the account and the bank account each intent would use, for many intents in one round
 * trip (SPEC §6, §7, §24): every named user's status, the accounts the intents name (those that exist) with up
 * to two of the organization's for the intents that name none, the bank accounts they name, and each named
 * user's newest active bank account.
 */
export async function lookupIntentPartiesOfMany(
  db: Queryable,
  organizationId: string,
  intents: readonly IntentPartiesRequest[],
): Promise<IntentParties[]> {
  const inputs = partiesInputs(intents);
  const { rows } = await db.query<PartiesRow>(
    intentPartiesSql({ organizationId: '$1', userIds: '$2::text[]', accountIds: '$3::text[]', bankAccountIds: '$4::text[]' }),
    [organizationId, inputs.userIds, inputs.accountIds, inputs.bankAccountIds],
  );
  return partiesOf(rowOf(rows, 'a select of subqueries answers one row'), intents);
}

/** What identifies an intent's parties request: its user, its account, and its bank account or the default one. */
function partiesRequestKey(intent: IntentPartiesRequest): string {
  return JSON.stringify([
    intent.user_id,
    intent.account_id ?? null,
    intent.bank_account_id === undefined ? { default: true } : intent.bank_account_id,
  ]);
}

/** The longest id a raw body's party may have to be read with the opening statements (a longer one fails validation). */
const OPENING_ID_LENGTH_MAX = 255;

/**
 * The parties request a raw (not yet validated) POST /intent body makes; null when it has no such shape. The body
 * has passed parseJsonBody, which refuses a NUL and a lone surrogate anywhere in it, so every id is text a literal
 * can carry.
 */
function rawPartiesRequest(body: unknown): IntentPartiesRequest | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const { user_id: userId, account_id: accountId, bank_account_id: bankAccountId } = body as Record<string, unknown>;
  const id = (value: unknown) => typeof value === 'string' && value.length <= OPENING_ID_LENGTH_MAX;
  if (
    !id(userId) ||
    (accountId !== undefined && !id(accountId)) ||
    (bankAccountId !== undefined && bankAccountId !== null && !id(bankAccountId))
  )
    return null;
  return {
    user_id: userId as string,
    account_id: accountId as string | undefined,
    bank_account_id: bankAccountId as string | null | undefined,
  };
}

/**
 * POST /intent's parties read (intentPartiesSql) as a statement of literals, sent with the write's opening
 * statements (RouteDef.opening) instead of in a round trip of its own (issue 37); it answers the request it was
 * made for beside the parties, so intentPartiesFromOpening can tell it answers the validated body. Null: the raw
 * body has no such shape (validation will refuse it).
 */
export function intentPartiesOpeningSql(body: unknown, organizationId: string): string | null {
  const request = rawPartiesRequest(body);
  if (!request) return null;
  const literal = (value: string) => pg.escapeLiteral(value);
  const array = (values: readonly string[]) => (values.length === 0 ? `'{}'::text[]` : `ARRAY[${values.map(literal).join(', ')}]::text[]`);
  const inputs = partiesInputs([request]);
  const refs = {
    organizationId: literal(organizationId),
    userIds: array(inputs.userIds),
    accountIds: array(inputs.accountIds),
    bankAccountIds: array(inputs.bankAccountIds),
  };
  return `SELECT ${literal(partiesRequestKey(request))} AS request, parties.* FROM (${intentPartiesSql(refs)}) AS parties`;
}

/** The parties intentPartiesOpeningSql read, when it read them for this (validated) intent; null otherwise. */
export function intentPartiesFromOpening(opening: QueryResult | null, intent: IntentPartiesRequest): IntentParties | null {
  const row = opening?.rows[0] as (PartiesRow & { request: string }) | undefined;
  if (row === undefined || row.request !== partiesRequestKey(intent)) return null;
  return rowOf(partiesOf(row, [intent]), 'partiesOf answers each intent');
}

/** lookupIntentPartiesOfMany of one intent. */
export async function lookupIntentParties(db: Queryable, organizationId: string, intent: IntentPartiesRequest): Promise<IntentParties> {
  return (await lookupIntentPartiesOfMany(db, organizationId, [intent]))[0]!;
}

export interface Balances {
  pending: number;
  available: number;
  in_transfer: number;
}

/**
 * The balances recomputed from the transactions themselves, by the documented formula. The maintained
 * balances must always equal these (tests and `account verify` check it).
 */
export async function recomputeBalances(db: Queryable, accountId: string): Promise<Balances> {
  const { rows } = await db.query<Balances>(
    `SELECT
       coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'pending'), 0)::bigint AS pending,
       (coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'available' AND transfer_id IS NULL), 0)
        - coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_out' AND status = 'pending'), 0))::bigint AS available,
       (coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'available' AND transfer_id IS NOT NULL), 0)
        - coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_out' AND status = 'in_transfer'), 0))::bigint AS in_transfer
     FROM transactions WHERE account_id = $1`,
    [accountId],
  );
  return rowOf(rows, 'a select of aggregates answers one row');
}
