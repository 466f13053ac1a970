import type { Queryable } from '../db/pool';
import type { AccountType } from '../bankAccounts/contract';
import type { CardBrand, MaskedBankAccount, MaskedCard } from './checks';
import type { Token } from './schemas';
import { rowOf } from '../assert';

/**
 * SQL owned by tokens: payment_tokens holds masked details, never a card number; a bank token also holds its
 * account number sealed (SPEC §24) until POST /authorize moves it into a bank account and clears it here.
 */

export interface TokenRow {
  id: string;
  organization_id: string;
  user_id: string;
  type: 'bank_account' | 'card';
  last4: string;
  bank_name: string | null;
  card_brand: CardBrand | null;
  exp_month: number | null;
  exp_year: number | null;
  expires_at: Date;
  used_at: Date | null;
  intent_id: string | null;
  created_at: Date;
  routing_number: string | null;
  account_type: AccountType | null;
  /** Sealed for this row (src/bankAccounts/sealing.ts); null once used, and on tokens made before 0040. */
  account_number_sealed: string | null;
  bank_account_id: string | null;
}

/** A bank token as POST /token makes it: the masked form and the sealed number. */
export interface BankTokenDetails extends MaskedBankAccount {
  routing_number: string;
  account_type: AccountType;
  account_number_sealed: string;
}

export function renderToken(row: TokenRow): Token {
  return {
    id: row.id,
    type: row.type,
    user_id: row.user_id,
    bank_account:
      row.type === 'bank_account'
        ? { bank: row.bank_name, last4: row.last4, routing_number: row.routing_number, account_type: row.account_type ?? 'checking' }
        : null,
    card: row.type === 'card' ? { brand: row.card_brand!, last4: row.last4, exp_month: row.exp_month!, exp_year: row.exp_year! } : null,
    expires_at: row.expires_at.toISOString(),
    used: row.used_at !== null,
    created_at: row.created_at.toISOString(),
  };
}

export async function insertToken(
  db: Queryable,
  input: { id: string; organizationId: string; userId: string; createdAt: Date; expiresAt: Date } & (
    { type: 'card'; card: MaskedCard } | { type: 'bank_account'; bankAccount: BankTokenDetails }
  ),
): Promise<TokenRow> {
  const card = input.type === 'card' ? input.card : null;
  const bank = input.type === 'bank_account' ? input.bankAccount : null;
  const { rows } = await db.query<TokenRow>(
    `INSERT INTO payment_tokens (id, organization_id, user_id, type, last4, bank_name, card_brand, exp_month, exp_year, expires_at, created_at,
                                 routing_number, account_type, account_number_sealed)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING *`,
    [
      input.id,
      input.organizationId,
      input.userId,
      input.type,
      card?.last4 ?? bank!.last4,
      bank?.bank ?? null,
      card?.brand ?? null,
      card?.exp_month ?? null,
      card?.exp_year ?? null,
      input.expiresAt,
      input.createdAt,
      bank?.routing_number ?? null,
      bank?.account_type ?? null,
      bank?.account_number_sealed ?? null,
    ],
  );
  return rowOf(rows, 'INSERT … RETURNING answers the token it inserted');
}

/** `forUpdate`: POST /authorize holds the token's row lock until it has recorded the use. */
export async function getTokenRow(db: Queryable, organizationId: string, tokenId: string, forUpdate = false): Promise<TokenRow | null> {
  const { rows } = await db.query<TokenRow>(
    `SELECT * FROM payment_tokens WHERE id = $1 AND organization_id = $2 ${forUpdate ? 'FOR UPDATE' : ''}`,
    [tokenId, organizationId],
  );
  return rows[0] ?? null;
}

/**
 * Records the one use, and the bank account a bank token became; the sealed number leaves the token (it
 * rests in the bank account now). The row is locked by the caller; `used_at IS NULL` makes a second use
 * impossible anyway.
 */
export async function markTokenUsed(
  db: Queryable,
  use: { tokenId: string; intentId: string; bankAccountId: string | null; now: Date },
): Promise<void> {
  const { rowCount } = await db.query(
    `UPDATE payment_tokens SET used_at = $3, intent_id = $2, bank_account_id = $4, account_number_sealed = NULL
      WHERE id = $1 AND used_at IS NULL`,
    [use.tokenId, use.intentId, use.now, use.bankAccountId],
  );
  if (rowCount !== 1) throw new Error(`token ${use.tokenId} was already used`);
}
