import { dateString, dateTime, idExample, pageQuery, z } from '../zod';

/** Journal limits (SPEC §21): a statement covers at most this many calendar days, both ends included. */
export const JOURNAL_LIMITS = {
  statementDaysMax: 366,
};

export const ENTRY_KINDS = ['cash_in_recorded', 'cash_in_confirmed', 'cash_out_recorded', 'transfer_created', 'transfer_settled'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];
export const BUCKETS = ['network', 'pending', 'available', 'in_transfer', 'operational'] as const;

export const balancesSchema = z
  .object({
    pending: z.number().int(),
    available: z.number().int(),
    in_transfer: z.number().int(),
  })
  .openapi('Balances', { description: "An account's buckets in integer cents (see GET /account for what each holds)." });
export type Balances = z.infer<typeof balancesSchema>;

export const balancesAtQuery = z.object({
  at: dateTime.optional().openapi({ description: 'The instant (default: now). Entries stamped at or after it are not counted.' }),
});
export type BalancesAtQuery = z.infer<typeof balancesAtQuery>;

export const balancesAtSchema = balancesSchema
  .extend({
    account_id: z.string().openapi({ example: idExample('account') }),
    at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('BalancesAt');
export type BalancesAt = z.infer<typeof balancesAtSchema>;

export const postingSchema = z
  .object({
    bucket: z.enum(BUCKETS).openapi({
      description:
        "A bucket of the account, or a counterparty outside the ledger (`network`: the payment network; `operational`: the operator's account).",
    }),
    amount: z.number().int().openapi({ description: 'Signed US cents; the postings of an entry sum to zero.' }),
  })
  .openapi('Posting');

export const entrySchema = z
  .object({
    id: z.string().openapi({ example: idExample('je') }),
    account_id: z.string().openapi({ example: idExample('account') }),
    kind: z.enum(ENTRY_KINDS),
    transaction_id: z.string().nullable().openapi({ description: 'Set for the kinds of one transaction (`cash_*`).' }),
    transfer_id: z.string().nullable().openapi({ description: 'Set for the kinds of a transfer (`transfer_*`).' }),
    postings: z.array(postingSchema),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .strict()
  .openapi('JournalEntry');
export type Entry = z.infer<typeof entrySchema>;

export const entryListQuery = pageQuery.extend({
  'created_at.gte': dateTime.optional(),
  'created_at.lt': dateTime.optional(),
  transaction_id: z.string().max(100).optional(),
  transfer_id: z.string().max(100).optional(),
});
export type EntryListQuery = z.infer<typeof entryListQuery>;

const DAY_MS = 86_400_000;

export const statementQuery = z
  .object({
    from: dateString.openapi({ description: 'First Eastern calendar day (settlement window) of the statement.' }),
    to: dateString.openapi({
      description: `Last day, included; at most ${JOURNAL_LIMITS.statementDaysMax} days from \`from\`, both included.`,
    }),
    format: z.enum(['json', 'csv']).default('json').openapi({ description: '`json` (default) or `csv`: one row per posting, streamed.' }),
  })
  .superRefine((query, ctx) => {
    const days = (Date.parse(`${query.to}T00:00:00Z`) - Date.parse(`${query.from}T00:00:00Z`)) / DAY_MS + 1;
    if (days < 1) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
    else if (days > JOURNAL_LIMITS.statementDaysMax)
      ctx.addIssue({
        code: 'custom',
        path: ['to'],
        message: `must be at most ${JOURNAL_LIMITS.statementDaysMax} days from from, both included`,
      });
  });
export type StatementQuery = z.infer<typeof statementQuery>;

const kindTotalSchema = z.object({ count: z.number().int(), amount: z.number().int() });

export const statementSchema = z
  .object({
    account_id: z.string().openapi({ example: idExample('account') }),
    from: dateString,
    to: dateString,
    opening: balancesSchema.openapi({ description: 'The balances at the start of `from`.' }),
    closing: balancesSchema.openapi({ description: 'The balances at the end of `to`: opening plus every entry in between.' }),
    totals: z
      .object(Object.fromEntries(ENTRY_KINDS.map((kind) => [kind, kindTotalSchema])) as Record<EntryKind, typeof kindTotalSchema>)
      .openapi({ description: 'Per entry kind, how many entries and the sum of their amounts (signed for transfers).' }),
  })
  .openapi('Statement');
export type Statement = z.infer<typeof statementSchema>;

export const STATEMENT_CSV_COLUMNS = ['entry_id', 'kind', 'transaction_id', 'transfer_id', 'bucket', 'amount', 'created_at'] as const;

export const statementCsvSchema = z.string().openapi({
  description: `Every posting of the statement's entries as CSV (RFC 4180, UTF-8): a header row \`${STATEMENT_CSV_COLUMNS.join(',')}\`, oldest first, streamed (no paging). \`amount\` in signed US cents, \`created_at\` ISO 8601 UTC.`,
});
