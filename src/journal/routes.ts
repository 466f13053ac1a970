import type { Response } from 'express';
import { defineRoute } from '../http/route';
import { idParams } from '../ledger/contract';
import { listEnvelope } from '../zod';
import { streamStatementCsv } from './repo';
import {
  balancesAtQuery,
  balancesAtSchema,
  entryListQuery,
  entrySchema,
  statementCsvSchema,
  statementQuery,
  statementSchema,
  type BalancesAtQuery,
  type EntryListQuery,
  type StatementQuery,
} from './schemas';
import { accountBalancesAt, accountEntries, accountStatement, statementCsvSpan } from './service';

export const journalRoutes = [
  defineRoute<unknown, { id: string }, BalancesAtQuery>({
    method: 'get',
    path: '/account/{id}/balances',
    tag: 'Accounts',
    summary: "An account's balances at an instant",
    description:
      'The balances as of `at` (default now), exact to the entry: the sums of the postings of every journal entry stamped before `at`, read from the daily snapshot at or before `at` plus the entries since.',
    params: idParams,
    query: balancesAtQuery,
    errorStatuses: [404],
    response: { schema: balancesAtSchema, description: 'The balances at that instant.' },
    async handler({ op, params, query }) {
      return { body: await accountBalancesAt(op, params.id, query.at) };
    },
  }),
  defineRoute<unknown, { id: string }, EntryListQuery>({
    method: 'get',
    path: '/account/{id}/entries',
    tag: 'Accounts',
    summary: "An account's journal entries, newest first",
    description:
      'Every change to the balances is an append-only entry whose postings sum to zero (docs/journal.md has the posting rule of each kind). Filters combine with AND.',
    params: idParams,
    query: entryListQuery,
    errorStatuses: [404],
    response: { schema: listEnvelope(entrySchema).openapi('JournalEntryList'), description: 'A page of entries.' },
    async handler({ op, params, query }) {
      return { body: await accountEntries(op, params.id, query) };
    },
  }),
  defineRoute<unknown, { id: string }, StatementQuery>({
    method: 'get',
    path: '/account/{id}/statement',
    tag: 'Accounts',
    summary: "An account's statement over settlement days (JSON or CSV)",
    description: [
      '`from` and `to` are settlement days (Eastern calendar days shifted by SETTLEMENT_CUTOFF), both included, at most 366 days. JSON: the balances at the start of `from` and at the end of `to`, and per entry kind its count and amount; opening plus the entries is checked to equal closing every time it is read (a disagreement answers 500 and is logged as an invariant violation).',
      '`?format=csv`: `text/csv`, one row per posting, oldest first, streamed from the database as it is read. A statement cut short by a failure ends without the final chunk, never as a shorter CSV.',
    ].join('\n\n'),
    params: idParams,
    query: statementQuery,
    errorStatuses: [404],
    response: {
      schema: statementSchema,
      description: 'The statement (`application/json`), or with `?format=csv` its postings (`text/csv`).',
      otherContent: { 'text/csv': statementCsvSchema },
    },
    async handler({ op, params, query, deps, requestId }) {
      if (query.format === 'json') return { body: await accountStatement(op, params.id, query) };
      const span = await statementCsvSpan(op, params.id, query);
      return {
        body: null,
        send: async (res: Response) => {
          res.status(200).type('text/csv; charset=utf-8');
          res.set('Content-Disposition', `attachment; filename="${params.id}-${query.from}-${query.to}.csv"`);
          try {
            await streamStatementCsv(deps.pool, params.id, span, res);
          } catch (error) {
            // The status line is gone: the only honest signal left is a response that never completes.
            if (!res.destroyed) deps.log.error({ err: error, account_id: params.id, request_id: requestId }, 'account statement cut short');
            res.destroy();
          }
        },
      };
    },
  }),
];
