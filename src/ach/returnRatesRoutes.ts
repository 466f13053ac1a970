import { defineRoute } from '../http/route';
import { returnRates, returnRatesSchema } from './returnRates';

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
