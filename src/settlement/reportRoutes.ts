import type { Response } from 'express';
import { defineRoute } from '../http/route';
import { idParams } from '../ledger/contract';
import { checkedTransfer, logInvariantViolation, streamTransferCsv, TransferReportInvariantError, transferReport } from './report';
import { transferReportCsvSchema, transferReportQuery, transferReportSchema, type TransferReportQuery } from './reportSchemas';

export const settlementReportRoutes = [
  defineRoute<unknown, { id: string }, TransferReportQuery>({
    method: 'get',
    path: '/transfer/{id}/report',
    tag: 'Transfers',
    summary: 'Reconciliation report of a transfer (JSON or CSV)',
    description: [
      "The statement to match a transfer against the bank account: the transfer; totals over every member — count and amount of `cash_in` and of `cash_out`, the signed `net` (always equal to the transfer's signed amount: +amount for a disbursement, −amount for a collection), and the same per transaction `type` — and its members.",
      'JSON (default): one page of members, newest first, paged like every list (`?limit=1..100`, default 25, `?cursor=`).',
      "`?format=csv`: `text/csv`, the FULL statement in one answer — a header row `id,direction,type,source_id,amount,created_at,date` and one row per member, oldest first — streamed from the database as it is read, whatever the transfer's size (paging parameters do not apply). A statement cut short by a failure ends without the final chunk, never as a shorter CSV.",
      'A transfer whose members disagree with its amount answers 500 (and is logged as an invariant violation) instead of a report.',
    ].join('\n\n'),
    params: idParams,
    query: transferReportQuery,
    errorStatuses: [404],
    response: {
      schema: transferReportSchema,
      description: 'The report (`application/json`), or with `?format=csv` the full statement (`text/csv`).',
      otherContent: { 'text/csv': transferReportCsvSchema },
    },
    async handler({ op, params, query, deps, requestId }) {
      const context = { request_id: requestId };
      if (query.format === 'json') return { body: await transferReport(op, params.id, query, context) };
      // Checked before the first byte: a disagreement is still a proper 500.
      const { row } = await checkedTransfer(op, params.id, context);
      return {
        body: null,
        send: async (res: Response) => {
          res.status(200).type('text/csv; charset=utf-8');
          res.set('Content-Disposition', `attachment; filename="${row.id}.csv"`);
          try {
            await streamTransferCsv(deps.pool, row, res);
          } catch (error) {
            // The status line is gone: the only honest signal left is a response that never completes.
            if (error instanceof TransferReportInvariantError) logInvariantViolation(deps, error, context);
            else if (!res.destroyed) deps.log.error({ err: error, transfer_id: row.id, ...context }, 'transfer statement cut short');
            res.destroy();
          }
        },
      };
    },
  }),
];
