import { metadataField, metadataFilter, metadataSchema } from '../metadata/schemas';
import { pageQuery, z } from '../zod';
import { LEDGER_LIMITS, transactionSchema } from '../ledger/contract';

const exampleId = (prefix: string) => `${prefix}_7fJ2kQ9xLmN3pR5tV8wY1zA4`;

export const refundStatusSchema = z.enum(['pending', 'succeeded']).openapi({
  description:
    "Read from the refund's transaction: `pending` until that cash_out transaction is `settled` (its transfer reached the network), then `succeeded`.",
});
export type RefundStatus = z.infer<typeof refundStatusSchema>;

export const refundSchema = z
  .object({
    id: z.string().openapi({ example: exampleId('refund') }),
    intent_id: z.string().openapi({ example: 'intent_sandbox_7fJ2kQ9xLmN3pR5tV8wY1zA4' }),
    amount: z.number().int().min(1).openapi({ description: 'US cents returned to the user.', example: 500 }),
    currency: z.literal('USD'),
    status: refundStatusSchema,
    transaction: transactionSchema.openapi({ description: 'The cash_out Transaction of type `refund` (source_id = this refund).' }),
    metadata: metadataSchema,
    created_at: z.string().openapi({ format: 'date-time', example: '2026-11-21T15:04:05.000Z' }),
  })
  .openapi('Refund', {
    description:
      'Money returned to the user from an approved cash_in intent. Recorded as a cash_out Transaction of type `refund` that lives the cash_out lifecycle and settles in the next settlement window.',
  });
export type Refund = z.infer<typeof refundSchema>;

export const createRefundBody = z
  .object({
    intent_id: z
      .string()
      .min(1)
      .max(100)
      .openapi({ description: 'An approved cash_in intent.', example: 'intent_sandbox_7fJ2kQ9xLmN3pR5tV8wY1zA4' }),
    amount: z.number().int().min(1).max(LEDGER_LIMITS.amountCentsMax).optional().openapi({
      description:
        'US cents, at most what is left of the intent (its amount minus earlier refunds and disputes not won). Omitted: all that is left.',
      example: 500,
    }),
    metadata: metadataField,
  })
  .strict()
  .openapi('CreateRefund', {
    example: { intent_id: 'intent_sandbox_7fJ2kQ9xLmN3pR5tV8wY1zA4', amount: 500, metadata: { return_id: 'rma-7731' } },
  });
export type CreateRefundBody = z.infer<typeof createRefundBody>;

export const refundListQuery = pageQuery.extend({
  intent_id: z.string().max(100).optional().openapi({ description: 'Only refunds of this intent.' }),
  metadata: metadataFilter,
});
export type RefundListQuery = z.infer<typeof refundListQuery>;
