import { errors } from '../errors';
import { defineRoute } from '../http/route';
import { getUserStatus } from '../users/contract';
import { userIdParams } from '../users/contract';
import { listBankAccountsOfUser } from './repo';
import { bankAccountList, bankAccountListQuery } from './schemas';

/** SPEC §24: a user's bank accounts. They are made by POST /authorize with a bank token (src/tokens). */
export const bankAccountRoutes = [
  defineRoute({
    method: 'get',
    path: '/user/{id}/bank_account',
    operationId: 'listUserBankAccounts',
    tag: 'Users',
    summary: "List a user's bank accounts",
    description: [
      'The bank accounts POST /authorize made from bank account tokens for this user, newest first (paged with `limit` and `cursor`).',
      'The same routing and account number authorized again for the same user is the same bank account (its `id` is reused).',
      'Only the masked form is shown: routing number, bank, last four characters; the account number is kept sealed for the ACH rail.',
      "POST /intent uses the user's newest `active` one when it names no `bank_account_id`.",
      "Another organization's user id answers 404, exactly like an unknown one.",
    ].join(' '),
    params: userIdParams,
    query: bankAccountListQuery,
    errorStatuses: [404],
    response: { schema: bankAccountList, description: "One page of the user's bank accounts." },
    async handler({ caller, db, params, query }) {
      if ((await getUserStatus(db, caller.organization.id, params.id)) === null) throw errors.notFound('user', params.id);
      return { body: await listBankAccountsOfUser(db, caller.organization.id, params.id, query) };
    },
  }),
];
