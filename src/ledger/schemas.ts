import { metadataField, metadataFilter, metadataSchema } from '../metadata/schemas';
import { EDGE_LIMITS, IDEMPOTENCY_KEY_PATTERN } from '../http/limits';
import { pageQuery, z, dateString, dateTime, errorBodySchema, idExample } from '../zod';
import { declineLimitSchema } from '../limits/contract';
import { DIRECTIONS, TRANSACTION_STATUSES } from './workflowContract';

/** Ledger limits: the largest single payment, $10 million, far below 2^53 cents. */
export const LEDGER_LIMITS = {
  amountCentsMax: 1_000_000_000,
};

export const directionSchema = z.enum(DIRECTIONS).openapi({ description: '`cash_in` (deposit) or `cash_out` (withdrawal).' });
export type Direction = z.infer<typeof directionSchema>;

export const transactionStatusSchema = z.enum(TRANSACTION_STATUSES).openapi({
  description: 'cash_in: pending → available → settled. cash_out: pending → in_transfer → settled. `settled` is final.',
});
export type TransactionStatus = z.infer<typeof transactionStatusSchema>;

export const transactionTypeSchema = z.enum(['intent', 'refund', 'dispute']);
export type TransactionType = z.infer<typeof transactionTypeSchema>;

export const transferSummarySchema = z
  .object({
    id: z.string().openapi({ example: idExample('transfer') }),
    amount: z.number().int().min(0),
    currency: z.literal('USD'),
    direction: z.enum(['disbursement', 'collection']),
    created_at: z.string().openapi({ format: 'date-time' }),
    date: dateString.openapi({ format: 'date' }),
  })
  .openapi('TransferSummary');
export type TransferSummary = z.infer<typeof transferSummarySchema>;

/** Exactly the seed's Transaction. */
export const transactionSchema = z
  .object({
    id: z.string().openapi({ example: idExample('txn') }),
    amount: z
      .number()
      .int()
      .min(0)
      .openapi({ description: 'US cents, never negative; `direction` says which way it moved.', example: 1250 }),
    direction: directionSchema,
    currency: z.literal('USD'),
    status: transactionStatusSchema,
    type: transactionTypeSchema,
    source_id: z.string().nullable().openapi({ description: 'The intent, refund or dispute that created it (read with `type`).' }),
    account_id: z.string().openapi({ example: idExample('account') }),
    created_at: z.string().openapi({ format: 'date-time' }),
    date: dateString.openapi({
      format: 'date',
      description: 'The Eastern-time settlement window (with SETTLEMENT_CUTOFF) it was submitted in.',
    }),
    transfer: transferSummarySchema.nullable().openapi({ description: 'Set once the transaction is in_transfer or settled; null before.' }),
  })
  .strict()
  .openapi('Transaction');
export type Transaction = z.infer<typeof transactionSchema>;

export const intentStatusSchema = z.enum(['pending', 'approved', 'declined', 'canceled']).openapi({
  description:
    '`approved` created a transaction; `declined` created none (see decline_category); `pending` waits for approve/cancel (manual mode).',
});
export type IntentStatus = z.infer<typeof intentStatusSchema>;

export const declineCategorySchema = z
  .enum(['user_not_enabled', 'card_expired', 'bank_account_disabled', 'no_bank_account', 'limit_exceeded'])
  .openapi({
    description:
      'Why an intent was declined: `user_not_enabled` (the user is not `enabled`), `card_expired` (POST /authorize: the card expired after it was tokenized), `bank_account_disabled` (its bank account is `disabled`), `no_bank_account` (production only: no bank account named and the user has no active one, so the ACH rail has nothing to debit or credit), `limit_exceeded` (it would take the user over a limit, named in `decline_limit`).',
  });
export type DeclineCategory = z.infer<typeof declineCategorySchema>;

export const intentSchema = z
  .object({
    id: z.string().openapi({ example: 'intent_sandbox_7fJ2kQ9xLmN3pR5tV8wY1zA4' }),
    idempotency_key: z.string(),
    direction: directionSchema,
    user_id: z.string().openapi({ example: idExample('user') }),
    account_id: z.string().openapi({ example: idExample('account') }),
    amount: z.number().int().min(1),
    currency: z.literal('USD'),
    approval_mode: z.enum(['automatic', 'manual']),
    status: intentStatusSchema,
    decline_category: declineCategorySchema.nullable(),
    bank_account_id: z
      .string()
      .nullable()
      .openapi({
        description:
          'The bank account (ba_…) its ACH entry debits or credits; null when it has none (sandbox simulates the network; a card authorization names none).',
        example: idExample('ba'),
      }),
    decline_limit: declineLimitSchema
      .nullable()
      .openapi({ description: 'With `limit_exceeded`: the limit, and what its period had used before this intent; null otherwise.' }),
    transactions: z.array(transactionSchema),
    metadata: metadataSchema,
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Intent');
export type Intent = z.infer<typeof intentSchema>;

/** The amount of one payment a client asks for (POST /intent, POST /authorize): 1 cent to LEDGER_LIMITS.amountCentsMax. */
export const paymentAmountSchema = z
  .number()
  .int()
  .min(1)
  .max(LEDGER_LIMITS.amountCentsMax)
  .openapi({ description: 'US cents, 1 to 1,000,000,000.', example: 1250 });

/**
 * The fields of one intent a client asks for: POST /intent's body, and each item of a batch (with its own
 * idempotency key beside them). Checked with `refineIntentBody`.
 */
export const intentBodyShape = {
  direction: directionSchema,
  user_id: z.string().min(1).max(100),
  amount: paymentAmountSchema,
  currency: z.literal('USD'),
  account_id: z.string().min(1).max(100).optional().openapi({ description: 'Required when the organization has several accounts.' }),
  bank_account_id: z
    .string()
    .min(1)
    .max(100)
    .optional()
    .openapi({
      description:
        "One of the user's bank accounts (GET /user/{id}/bank_account). Default: the user's newest `active` one. A disabled one declines the intent (`bank_account_disabled`); one that is not this user's is 400 `resource_missing`.",
      example: idExample('ba'),
    }),
  approval_mode: z.enum(['automatic', 'manual']).default('automatic').openapi({
    description: '`manual` (cash_out only) keeps the intent pending until POST /intent/{id}/approve or /cancel.',
  }),
  metadata: metadataField,
};

/** refineIntentBody as JSON Schema: `approval_mode: manual` only with `direction: cash_out`. */
const manualIsCashOut = {
  if: { properties: { approval_mode: { const: 'manual' } }, required: ['approval_mode'] },
  then: { properties: { direction: { const: 'cash_out' } } },
};

/** The rules across an intent body's fields. */
export function refineIntentBody(body: { approval_mode: 'automatic' | 'manual'; direction: Direction }, ctx: z.RefinementCtx): void {
  if (body.approval_mode === 'manual' && body.direction !== 'cash_out') {
    ctx.addIssue({ code: 'custom', path: ['approval_mode'], message: 'manual approval exists for cash_out only' });
  }
}

export const createIntentBody = z
  .object(intentBodyShape)
  .strict()
  .superRefine(refineIntentBody)
  .openapi('CreateIntent', {
    ...manualIsCashOut,
    example: { direction: 'cash_in', user_id: idExample('user'), amount: 1250, currency: 'USD', metadata: { order_id: 'order-1234' } },
  });
export type CreateIntentBody = z.infer<typeof createIntentBody>;

/** SPEC §19: a batch of POST /intent bodies, each with its own idempotency key. */
export const BATCH_LIMITS = { intentsMax: 100 };

const batchItemKey = z
  .string({ error: 'must be a string' })
  .min(1)
  .max(EDGE_LIMITS.idempotencyKeyLengthMax)
  .regex(IDEMPOTENCY_KEY_PATTERN, 'must be printable ASCII')
  .openapi({
    description:
      "The item's own idempotency key, exactly as POST /intent's `X-Idempotency-Key` (1–255 printable ASCII, unique within the batch, not the batch's own key).",
    example: 'payout-2024-05-01-0001',
  });

/** Every item's key once: the first repeat is the one named. */
function refineUniqueKeys(body: { intents: ReadonlyArray<{ idempotency_key: string }> }, ctx: z.RefinementCtx): void {
  const seen = new Map<string, number>();
  body.intents.forEach((item, index) => {
    const first = seen.get(item.idempotency_key);
    if (first === undefined) seen.set(item.idempotency_key, index);
    else ctx.addIssue({ code: 'custom', path: ['intents', index, 'idempotency_key'], message: `repeats the key of intents.${first}` });
  });
}

/**
 * What the edge checks of a batch before any item runs: the envelope and every item's key. The rest of each
 * item is checked by POST /intent's own schema, item by item, so one bad item is that item's 400 alone.
 */
export const intentBatchEnvelope = z
  .strictObject({
    intents: z
      .array(z.looseObject({ idempotency_key: batchItemKey }), { error: 'must be an array of intents' })
      .min(1)
      .max(BATCH_LIMITS.intentsMax),
  })
  .superRefine(refineUniqueKeys);
export type IntentBatchEnvelope = z.infer<typeof intentBatchEnvelope>;

/** The batch as documented: each item is CreateIntent plus its key (intentBatchEnvelope is what runs first). */
export const createIntentBatchBody = z
  .strictObject({
    intents: z
      .array(
        z
          .strictObject({ idempotency_key: batchItemKey, ...intentBodyShape })
          .superRefine(refineIntentBody)
          .openapi('CreateIntentBatchItem', manualIsCashOut),
      )
      .min(1)
      .max(BATCH_LIMITS.intentsMax),
  })
  .openapi('CreateIntentBatch', {
    example: {
      intents: [
        { idempotency_key: 'payout-0001', direction: 'cash_out', user_id: idExample('user'), amount: 1250, currency: 'USD' },
        {
          idempotency_key: 'payout-0002',
          direction: 'cash_out',
          user_id: idExample('user'),
          amount: 990,
          currency: 'USD',
          metadata: { payout_run: '2024-05-01' },
        },
      ],
    },
  });

export const intentBatchItemResultSchema = z
  .object({
    idempotency_key: z.string(),
    status: z.number().int().openapi({ description: 'The HTTP status POST /intent would have answered for this item.', example: 200 }),
    intent: intentSchema.optional().openapi({ description: 'With a 2xx `status`: the intent, exactly as POST /intent answers it.' }),
    error: errorBodySchema.shape.error.optional().openapi({ description: 'Otherwise: the error object POST /intent would have answered.' }),
  })
  .openapi('IntentBatchItemResult');

export const intentBatchResultSchema = z
  .object({ data: z.array(intentBatchItemResultSchema).openapi({ description: "One result per item, in the request's order." }) })
  .openapi('IntentBatchResult');
export type IntentBatchItemResult = z.infer<typeof intentBatchItemResultSchema>;

export const balancesSchema = z
  .object({
    pending: z.number().int().openapi({ description: 'Σ cash_in still pending (funds not yet confirmed by the network).' }),
    available: z.number().int().openapi({
      description:
        'Σ confirmed (available) cash_in not yet in a transfer − Σ pending cash_out not yet in a transfer: what the next transfer would net. Negative means the next transfer collects.',
    }),
    in_transfer: z.number().int().openapi({
      description:
        'Signed net of transfers not yet settled: Σ available cash_in in a transfer − Σ in_transfer cash_out. Positive is a disbursement under way, negative a collection.',
    }),
  })
  .openapi('AccountBalances');

export const accountSchema = z
  .object({
    id: z.string().openapi({ example: idExample('account') }),
    type: z.literal('settlement'),
    name: z.string(),
    currency: z.literal('USD'),
    balances: balancesSchema,
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('Account', {
    description: `A settlement account. Balances are exact integer cents, maintained by the database in the same transaction as every status change:
- pending = Σ cash_in in status pending
- available = Σ cash_in available and not yet in a transfer − Σ cash_out pending
- in_transfer = Σ cash_in available in an unsettled transfer − Σ cash_out in_transfer
Settled transactions leave all three.`,
  });
export type Account = z.infer<typeof accountSchema>;

export const idParams = z.object({ id: z.string().min(1).max(100) });

export const transactionListQuery = pageQuery.extend({
  status: transactionStatusSchema.optional(),
  user_id: z
    .string()
    .max(100)
    .optional()
    .openapi({ description: "Only transactions of this user's intents, and of their refunds and disputes." }),
  metadata: metadataFilter.openapi({
    description:
      '`metadata[KEY]=VALUE`: only transactions whose source (the intent or refund that made it) holds exactly this value under KEY; several keys must all match. Dispute transactions have no metadata of their own and never match.',
  }),
  direction: directionSchema.optional(),
  type: transactionTypeSchema.optional(),
  account_id: z.string().max(100).optional(),
  date: dateString.optional().openapi({ description: 'Settlement date (YYYY-MM-DD).' }),
  transfer_id: z.string().max(100).optional(),
  'created_at.gte': dateTime.optional().openapi({ description: 'Created at or after (ISO 8601).' }),
  'created_at.lt': dateTime.optional().openapi({ description: 'Created before (ISO 8601).' }),
});
export type TransactionListQuery = z.infer<typeof transactionListQuery>;

export const intentListQuery = pageQuery.extend({
  status: intentStatusSchema.optional(),
  direction: directionSchema.optional(),
  user_id: z.string().max(100).optional(),
  metadata: metadataFilter,
});
export type IntentListQuery = z.infer<typeof intentListQuery>;
