import { listEnvelope, pageQuery, z, dateString, idExample } from '../zod';
import { transactionSchema } from '../ledger/contract';

export { SETTLEMENT_LIMITS } from './workflowContract';

export const transferDirectionSchema = z.enum(['disbursement', 'collection']).openapi({
  description:
    '`disbursement`: net payout to the operator (cash_in exceeded cash_out, or exactly 0). `collection`: net withdrawal from the operator (cash_out exceeded cash_in).',
});
export const transferStatusSchema = z.enum(['pending', 'settled']).openapi({
  description: '`pending` from creation until the network settles it; `settled` is final.',
});

export const transferSchema = z
  .object({
    id: z.string().openapi({ example: idExample('transfer') }),
    amount: z
      .number()
      .int()
      .min(0)
      .openapi({ description: 'Net amount in US cents, never negative; `direction` gives its sign.', example: 4250 }),
    currency: z.literal('USD'),
    direction: transferDirectionSchema,
    status: transferStatusSchema,
    account_id: z.string().openapi({ example: idExample('account') }),
    date: dateString.openapi({
      format: 'date',
      description: 'Settlement date: the Eastern calendar day on which the window closed and the transfer was sent.',
    }),
    window_date: dateString.openapi({
      format: 'date',
      description: 'The settlement window this transfer closes; its transactions have `date` ≤ window_date.',
    }),
    transaction_count: z.number().int().min(1),
    created_at: z.string().openapi({ format: 'date-time' }),
    settled_at: z.string().nullable().openapi({ format: 'date-time', description: 'When the network settled it; null while pending.' }),
  })
  .openapi('Transfer', {
    description:
      "The net of one settlement account's eligible transactions for one window: Σ cash_in − Σ cash_out. Positive → disbursement, negative → collection, exactly 0 → a 0 disbursement that settles without moving money.",
  });
export type Transfer = z.infer<typeof transferSchema>;

export const transferWithTransactionsSchema = transferSchema
  .extend({
    transactions: listEnvelope(transactionSchema).openapi({
      description: 'A page of its transactions, newest first (`?limit`, `?cursor`).',
    }),
  })
  .openapi('TransferWithTransactions');

export const transferListQuery = pageQuery.extend({
  date: dateString.optional().openapi({ description: 'Settlement date (YYYY-MM-DD).' }),
  window_date: dateString.optional().openapi({ description: 'Window date (YYYY-MM-DD).' }),
  status: transferStatusSchema.optional(),
  direction: transferDirectionSchema.optional(),
  account_id: z.string().max(100).optional(),
});
export type TransferListQuery = z.infer<typeof transferListQuery>;

export const simulateSettlementBody = z
  .object({
    date: dateString.optional().openapi({ description: 'The window to close (YYYY-MM-DD); default: the window open now.' }),
    account_id: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .openapi({ description: 'Only this account; default: every account of the organization.' }),
  })
  .strict()
  .openapi('SimulateSettlement');
export type SimulateSettlementBody = z.infer<typeof simulateSettlementBody>;

export const settlementRunSchema = z
  .object({
    id: z.string().openapi({ description: 'Id of the window workflow (visible in the Temporal UI).' }),
    window_date: dateString.openapi({ format: 'date' }),
    account_id: z.string().nullable(),
    status: z.literal('started'),
  })
  .openapi('SettlementRun', { description: 'A window close under way. Watch GET /transfer?window_date=… for its transfers.' });
