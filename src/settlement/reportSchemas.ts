import { listEnvelope, pageQuery, z } from '../zod';
import { transactionSchema, transactionTypeSchema } from '../ledger/contract';
import { transferSchema } from './schemas';

const sideSchema = z.object({
  count: z.number().int().min(0).openapi({ description: 'Number of transactions.' }),
  amount: z.number().int().min(0).openapi({ description: 'Their sum in US cents.' }),
});

const sidesSchema = z.object({
  cash_in: sideSchema,
  cash_out: sideSchema,
  net: z.number().int().openapi({ description: 'cash_in.amount − cash_out.amount in US cents (signed).' }),
});

export const transferReportTotalsSchema = sidesSchema
  .extend({
    by_type: z
      .object(
        Object.fromEntries(transactionTypeSchema.options.map((type) => [type, sidesSchema])) as Record<
          'intent' | 'refund' | 'dispute',
          typeof sidesSchema
        >,
      )
      .openapi({ description: 'The same totals per transaction type; every type is present (zeros when it has no member).' }),
  })
  .openapi('TransferReportTotals', {
    description:
      "Totals over EVERY member of the transfer (not only the page shown). `net` always equals the transfer's signed amount (+amount for a disbursement, −amount for a collection); the server answers 500 rather than a report where it does not.",
  });

export const transferReportSchema = z
  .object({
    transfer: transferSchema,
    totals: transferReportTotalsSchema,
    transactions: listEnvelope(transactionSchema).openapi({
      description:
        "One page of the members, newest first: `?limit=1..100` (default 25) and `?cursor=` (this list's `next_cursor`). The full statement in one answer is `?format=csv`.",
    }),
  })
  .openapi('TransferReport', { description: 'A reconciliation statement of one transfer: the transfer, its totals and its members.' });
export type TransferReport = z.infer<typeof transferReportSchema>;
export type TransferReportTotals = z.infer<typeof transferReportTotalsSchema>;

export const TRANSFER_REPORT_CSV_COLUMNS = ['id', 'direction', 'type', 'source_id', 'amount', 'created_at', 'date'] as const;

export const transferReportCsvSchema = z.string().openapi({
  description: `The full statement as CSV (RFC 4180, UTF-8): a header row \`${TRANSFER_REPORT_CSV_COLUMNS.join(',')}\` and one row per member, oldest first, streamed (no size limit, no paging). \`amount\` in US cents, \`created_at\` ISO 8601 UTC, \`date\` YYYY-MM-DD; \`source_id\` empty when null.`,
  example: `${TRANSFER_REPORT_CSV_COLUMNS.join(',')}\ntxn_7fJ2kQ9xLmN3pR5tV8wY1zA4,cash_in,intent,intent_sandbox_7fJ2kQ9xLmN3pR5tV8wY1zA4,1000,2026-06-09T16:00:00.000Z,2026-06-09\n`,
});

export const transferReportQuery = pageQuery.extend({
  format: z
    .enum(['json', 'csv'])
    .default('json')
    .openapi({ description: '`json` (default): totals and one page of members. `csv`: the full statement as text/csv.' }),
});
export type TransferReportQuery = z.infer<typeof transferReportQuery>;
