import { ApiError, errors } from '../errors';
import { newId } from '../ids';
import { createIntent } from '../ledger/service';
import type { Intent } from '../ledger/schemas';
import type { Environment } from '../orgs/keys';
import type { Op, Outcome } from '../services';
import { getUserStatus } from '../users/repo';
import { cardExpired, maskBankAccount, maskCard } from './checks';
import { getTokenRow, insertToken, markTokenUsed, renderToken } from './repo';
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

/** Tokenizes a bank account or card; only the masked form is kept. */
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
  const row = input.card
    ? await insertToken(op.db, { ...common, type: 'card', card: maskCard(input.card) })
    : await insertToken(op.db, { ...common, type: 'bank_account', bankAccount: maskBankAccount(input.bank_account!) });
  return { body: renderToken(row) };
}

/** Spends a token on an intent, created exactly as POST /intent creates one (automatic approval). */
export async function authorize(op: Op, input: AuthorizeBody, environment: Environment): Promise<Outcome<Intent>> {
  const token = await getTokenRow(op.db, op.organizationId, input.token, true);
  if (!token) throw errors.resourceMissing('token', input.token);
  if (token.used_at !== null) throw tokenUsed(token.id);
  if (token.expires_at.getTime() <= op.now.getTime()) throw tokenExpired(token.id);
  const declineCategory = token.type === 'card' && cardExpired(token.exp_month!, token.exp_year!, op.now) ? 'card_expired' : null;
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
    },
    { environment, idempotencyKey: token.id, declineCategory },
  );
  await markTokenUsed(op.db, token.id, result.body.id, op.now);
  return result;
}
