import { defineRoute } from '../http/route';
import { returnRates, returnRatesSchema } from './returnRates';
import { achReturnSchema, simulateAchReturn, simulateAchReturnBody } from './sandboxBank';

export const achReturnRateRoutes = [
  defineRoute({
    method: 'get',
    path: '/ach/return_rates',
    tag: 'Accounts',
    summary: "The organization's ACH return rates",
    description:
      "SPEC §25: returned debit entries over the last 60 days of debits, by the NACHA Rules' kinds and thresholds: unauthorized (R05, R07, R10, R11, R29, R51) 0.5 %, administrative (R02, R03, R04) 3 %, overall 15 %. Crossing a threshold emits `ach.return_rate_exceeded` once.",
    response: { schema: returnRatesSchema, description: 'The rates, each with its count and threshold.' },
    async handler({ caller, db }) {
      return { body: await returnRates(db, caller.organization.id) };
    },
  }),
];

export const sandboxBankRoutes = [
  defineRoute({
    method: 'post',
    path: '/simulate/ach/return',
    tag: 'Simulation',
    summary: 'The simulated bank returns a settled ACH entry',
    description: `SPEC §25: the entry of \`transaction_id\` comes back with \`code\`, applied exactly as a return file from the bank: a returned deposit becomes a dispute (\`status: lost\`, code = the return code) with its cash_out \`dispute\` transaction; a returned credit (a cash_out's or a refund's) puts the money back: a dispute \`status: won\` with a cash_in \`dispute\` transaction; R02, R03, R04 disable the bank account; R05, R07, R10, R11, R29, R51 suspend the user.
Events: ach_entry.returned, dispute.created, dispute.resolved, transaction.created (and bank_account.disabled or user.status_changed). Errors: 400 \`resource_missing\` (no ACH entry of yours for that transaction), 409 \`invalid_state\` (the entry has not settled, or was already returned).`,
    sandboxOnly: true,
    body: simulateAchReturnBody,
    errorStatuses: [404, 409],
    response: { schema: achReturnSchema, description: 'The return, with the dispute it made.' },
    async handler({ op, body }) {
      return simulateAchReturn(op, body);
    },
  }),
];
