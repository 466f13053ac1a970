import { defineRoute } from '../http/route';
import { listEnvelope } from '../zod';
import {
  achExceptionListQuery,
  achExceptionSchema,
  achReturnListQuery,
  achReturnRecordSchema,
  listAchExceptions,
  listAchReturns,
} from './returnsList';

/** SPEC §25 for the console and support: what the bank sent back, as applied, and what could not be applied. */
export const achReturnListRoutes = [
  defineRoute({
    method: 'get',
    path: '/ach/returns',
    tag: 'ACH',
    summary: 'List ACH returns and notifications of change, newest first',
    description:
      'SPEC §25: each return (R code) or notification of change (C code) the bank sent about one of your entries, with the entry it named and what it did (`applied`): a lost dispute, a disabled bank account, a suspended user, a corrected bank account, or an exception for an operator. An item the bank sent twice is listed once. Filter: `type`.',
    query: achReturnListQuery,
    response: {
      schema: listEnvelope(achReturnRecordSchema).openapi('AchReturnRecordList'),
      description: 'A page of returns and notifications of change.',
    },
    async handler({ caller, db, query }) {
      return { body: await listAchReturns(db, caller.organization.id, query) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/ach/exceptions',
    tag: 'ACH',
    summary: 'List ACH inbound exceptions, newest first',
    description:
      "SPEC §25: what the bank sent that was kept but not applied, never dropped: a file that does not parse, a trace number no entry has or of another bank, a returned transfer, a return or change that does not apply. Yours, and those that matched no organization's entry (`matched: false`). Filter: `kind`.",
    query: achExceptionListQuery,
    response: { schema: listEnvelope(achExceptionSchema).openapi('AchExceptionList'), description: 'A page of exceptions.' },
    async handler({ caller, db, query }) {
      return { body: await listAchExceptions(db, caller.organization.id, query) };
    },
  }),
];
