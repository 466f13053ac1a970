import { bankAccountFromToken } from '../bankAccounts/contract';
import { sealAccountNumber } from '../bankAccounts/contract';
import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import { createIntent } from '../ledger/contract';
import type { Intent } from '../ledger/contract';
import type { Environment } from '../http/apiKeys';
import type { Op, Outcome } from '../services';
import { getUserStatus } from '../users/contract';
import { cardExpired, maskBankAccount, maskCard } from './checks';
import { getTokenRow, insertToken, markTokenUsed, renderToken, type TokenRow } from './repo';
import { TOKEN_LIMITS, type AuthorizeBody, type CreateTokenBody, type Token } from './schemas';

/** Tokens and authorization (SPEC §11): single-use, 15-minute tokens of masked payment details, spent by /authorize. */

export const tokenUsed = (id: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    code: 'token_used',
    message: `Token ${id} was already used for an authorization; tokens are single use. Create a new token.`,
    param: 'token',
  });
const tokenExpired = (id: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    code: 'token_expired',
    message: `Token ${id} expired (tokens are valid for 15 minutes). Create a new token.`,
    param: 'token',
  });
const cardExpiredError = () =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    code: 'card_expired',
    message: 'The card has expired (it is good through the last day of its expiry month, Eastern time).',
    param: 'card.exp_year',
  });

/** Tokenizes a bank account or card: a card's masked form only; a bank account's with its number sealed (SPEC §24). */
export async function createToken(op: Op, input: CreateTokenBody): Promise<Outcome<Token>> {
  if (input.card && cardExpired(input.card.exp_month, input.card.exp_year, op.now)) throw cardExpiredError();
  if ((await getUserStatus(op.db, op.organizationId, input.user_id)) === null) throw errors.resourceMissing('user_id', input.user_id);
  const common = {
    id: newId('token'),
    organizationId: op.organizationId,
    userId: input.user_id,
    createdAt: op.now,
    expiresAt: new Date(op.now.getTime() + TOKEN_LIMITS.ttlMs),
  };
  if (input.card) return { body: renderToken(await insertToken(op.db, { ...common, type: 'card', card: maskCard(input.card) })) };
  const account = input.bank_account!;
  const bankAccount = {
    ...maskBankAccount(account),
    routing_number: account.routing_number,
    account_type: account.account_type,
    // Bound to this token's row; POST /authorize opens it and seals it anew for the bank account.
    account_number_sealed: sealAccountNumber(op.deps.config, account.account_number, { table: 'payment_tokens', id: common.id }),
  };
  return { body: renderToken(await insertToken(op.db, { ...common, type: 'bank_account', bankAccount })) };
}

/** The bank account a bank token becomes (SPEC §24); none for a card, or a bank token made before bank accounts were kept. */
async function bankAccountIdOf(op: Op, token: TokenRow): Promise<string | null> {
  if (token.type !== 'bank_account' || token.account_number_sealed === null || token.routing_number === null) return null;
  const bankAccount = await bankAccountFromToken(op, {
    id: token.id,
    user_id: token.user_id,
    routing_number: token.routing_number,
    account_type: token.account_type ?? 'checking',
    account_number_sealed: token.account_number_sealed,
  });
  return bankAccount.id;
}

/**
 * Spends a token on an intent, created exactly as POST /intent creates one (automatic approval). A bank token
 * makes (or finds) the user's bank account and the intent names it; a card's intent names none.
 */
export async function authorize(op: Op, input: AuthorizeBody, environment: Environment): Promise<Outcome<Intent>> {
  const token = await getTokenRow(op.db, op.organizationId, input.token, true);
  if (!token) throw errors.resourceMissing('token', input.token);
  if (token.used_at !== null) throw tokenUsed(token.id);
  if (token.expires_at.getTime() <= op.now.getTime()) throw tokenExpired(token.id);
  const declineCategory = token.type === 'card' && cardExpired(token.exp_month!, token.exp_year!, op.now) ? 'card_expired' : null;
  const bankAccountId = await bankAccountIdOf(op, token);
  const result = await createIntent(
    op,
    {
      direction: input.direction,
      user_id: token.user_id,
      amount: input.amount,
      currency: input.currency,
      account_id: input.account_id,
      approval_mode: 'automatic',
      metadata: input.metadata,
      bank_account_id: bankAccountId,
    },
    { environment, idempotencyKey: token.id, declineCategory },
  );
  await markTokenUsed(op.db, { tokenId: token.id, intentId: result.body.id, bankAccountId, now: op.now });
  return result;
}
