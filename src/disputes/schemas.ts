import { pageQuery, z } from '../zod';
import { transactionSchema } from '../ledger/contract';

const exampleId = (prefix: string) => `${prefix}_7fJ2kQ9xLmN3pR5tV8wY1zA4`;

export const disputeStatusSchema = z.enum(['created', 'won', 'lost']).openapi({
  description: '`created` while the network decides; `won` (the funds come back) or `lost` (they stay with the user), both final.',
});
export type DisputeStatus = z.infer<typeof disputeStatusSchema>;

const disputeCode = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,32}$/, 'must be 1 to 32 letters, digits, dots, dashes or underscores')
  .openapi({
    description: "The network's reason code, e.g. an ACH return code (`R10`) or a card network reason code (`10.4`).",
    example: 'R10',
  });

export const disputeSchema = z
  .object({
    id: z.string().openapi({ example: exampleId('dispute') }),
    intent_id: z.string().openapi({ example: 'intent_sandbox_7fJ2kQ9xLmN3pR5tV8wY1zA4' }),
    amount: z.number().int().min(1).openapi({
      description:
        'US cents the network took back: what was left of the intent (its amount minus refunds); for a returned credit, the credit that came back.',
      example: 1250,
    }),
    currency: z.literal('USD'),
    code: disputeCode,
    reason: z.string().nullable().openapi({
      description:
        "The code's NACHA title when `code` is an ACH return code (always, for the dispute of a returned entry, SPEC §25); null for another network's code.",
      example:
        'Customer Advises Originator is Not Known to Receiver and/or Originator is Not Authorized by Receiver to Debit Receiver Account',
    }),
    status: disputeStatusSchema,
    transactions: z.array(transactionSchema).openapi({
      description:
        'Transactions of type `dispute` (source_id = this dispute), oldest first: the cash_out recorded when it opened and, once won, the cash_in that returns the funds. A returned credit (SPEC §25) has only the cash_in.',
    }),
    created_at: z.string().openapi({ format: 'date-time', example: '2026-11-21T15:04:05.000Z' }),
    resolved_at: z.string().nullable().openapi({ format: 'date-time', description: 'When it was won or lost; null while `created`.' }),
  })
  .openapi('Dispute', {
    description:
      "A payment the network disputes (a chargeback or returned debit) of an approved cash_in intent, one per intent; or a credit to the user the bank returned (a cash_out's or a refund's, SPEC §25), `won` at once: the money is back.",
  });
export type Dispute = z.infer<typeof disputeSchema>;

export const createDisputeBody = z
  .object({
    intent_id: z.string().min(1).max(100).openapi({ description: 'An approved cash_in intent with something left (not fully refunded).' }),
    code: disputeCode,
  })
  .strict()
  .openapi('SimulateDispute', { example: { intent_id: 'intent_sandbox_7fJ2kQ9xLmN3pR5tV8wY1zA4', code: 'R10' } });
export type CreateDisputeBody = z.infer<typeof createDisputeBody>;

export const resolveDisputeBody = z
  .object({ result: z.enum(['won', 'lost']).openapi({ description: '`won` returns the funds with a cash_in `dispute` transaction.' }) })
  .strict()
  .openapi('SimulateDisputeResolution', { example: { result: 'won' } });
export type ResolveDisputeBody = z.infer<typeof resolveDisputeBody>;

export const disputeListQuery = pageQuery.extend({
  status: disputeStatusSchema.optional(),
  intent_id: z.string().max(100).optional(),
});
export type DisputeListQuery = z.infer<typeof disputeListQuery>;
