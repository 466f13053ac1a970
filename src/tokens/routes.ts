import { defineRoute, retrieveRoute } from '../http/route';
import { idParams, intentSchema } from '../ledger/contract';
import { getTokenRow, renderToken } from './repo';
import { authorizeBody, createTokenBody, tokenSchema } from './schemas';
import { authorize, createToken, tokenUsed } from './service';

export const tokenRoutes = [
  defineRoute({
    method: 'post',
    path: '/token',
    tag: 'Tokens',
    summary: 'Tokenize a bank account or card',
    description: `Exchanges a bank account (\`routing_number\` must pass the ABA checksum) or a card (\`number\` must pass the Luhn check; not expired, by Eastern-time month) for a single-use token valid 15 minutes, to pass to POST /authorize.
Only the masked form is returned: the last four characters and the bank (when known), routing number and \`account_type\` (\`checking\` by default, or \`savings\`), or the card brand. A card number and the CVC are never stored or logged. A bank account number (4 to 17 letters or digits) is stored only sealed (AES-256-GCM under BANK_DATA_KEY) for the ACH rail, and appears in no answer, event, log line or metric (SPEC §24).
Idempotency: with \`X-Idempotency-Key\`, a retry replays the first token. Without one every request makes a new token: the exact-body rule of SPEC §5 would need a hash of the card number kept for 24 hours, which a short, single-use token does not justify.
Errors: 400 \`validation_failed\` (a failing check, one \`details\` entry per field; values are never echoed), 400 \`card_expired\`, 400 \`resource_missing\` (unknown user).`,
    body: createTokenBody,
    // No hash of a card or account number may be stored: requests are told apart by their masked form.
    idempotency: { fingerprint: maskedTokenRequest },
    response: { schema: tokenSchema, description: 'The token, with masked details only.' },
    async handler({ op, body }) {
      return createToken(op, body);
    },
  }),
  retrieveRoute({
    path: '/token/{id}',
    tag: 'Tokens',
    summary: 'Retrieve a token (masked)',
    params: idParams,
    response: { schema: tokenSchema, description: 'The token.' },
    resource: 'token',
    find: async (db, organizationId, id) => {
      const row = await getTokenRow(db, organizationId, id);
      return row && renderToken(row);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/authorize',
    operationId: 'authorizePayment',
    tag: 'Intents',
    summary: 'Authorize a payment with a token',
    description: `Creates an Intent exactly as POST /intent does (automatic approval), for the token's user; the intent's \`idempotency_key\` is the token.
Idempotent by \`token\` (SPEC §5, §11): the same request again — same token and body, under any or no X-Idempotency-Key — replays the first response with \`Idempotent-Replayed: true\`. A token authorizes once: the token with another body is 400 \`token_used\`; after its 15 minutes, 400 \`token_expired\`; an unknown token, 400 \`resource_missing\`.
A bank account token makes the account a reusable bank account of the token's user (GET /user/{id}/bank_account; the same routing and account number for the same user is the same \`ba_…\`), and the intent's \`bank_account_id\` names it. A card token's intent names no bank account.
Declines (the token is used up; no transaction): \`user_not_enabled\`, \`card_expired\` (the card's expiry month ended after it was tokenized), \`bank_account_disabled\` (the same account authorized again after it was disabled), \`no_bank_account\` (production: a card, which no rail of this service can charge yet).`,
    body: authorizeBody,
    idempotency: { bodyField: 'token', onFieldReuse: (token) => tokenUsed(token) },
    response: { schema: intentSchema, description: 'The intent, approved or declined.' },
    async handler({ op, body, caller }) {
      return authorize(op, body, caller.environment);
    },
  }),
];

/** What tells two tokenization requests apart without the secret digits (see the idempotency note above). */
function maskedTokenRequest(body: unknown): unknown {
  const input = (body ?? {}) as { user_id?: unknown; bank_account?: Record<string, unknown>; card?: Record<string, unknown> };
  const last4 = (value: unknown) => (typeof value === 'string' ? value.slice(-4) : null);
  return {
    user_id: input.user_id ?? null,
    bank_account: input.bank_account
      ? {
          routing_number: input.bank_account.routing_number ?? null,
          last4: last4(input.bank_account.account_number),
          account_type: input.bank_account.account_type ?? 'checking',
        }
      : null,
    card: input.card
      ? { last4: last4(input.card.number), exp_month: input.card.exp_month ?? null, exp_year: input.card.exp_year ?? null }
      : null,
  };
}
