import type { AnyRoute } from './http/route';
import { keyRoutes } from './orgs/routes';
import { userRoutes } from './users/routes';
import { ledgerRoutes } from './ledger/routes';
import { webhookRoutes } from './webhooks/routes';
import { eventRoutes } from './events/routes';
import { refundRoutes } from './refunds/routes';
import { disputeRoutes } from './disputes/routes';
import { tokenRoutes } from './tokens/routes';
import { settlementRoutes } from './settlement/routes';
import { settlementReportRoutes } from './settlement/reportRoutes';
import { journalRoutes } from './journal/routes';
import { bankAccountRoutes } from './bankAccounts/routes';
import { limitRoutes } from './limits/routes';
import { achRoutes } from './ach/routes';
import { achReturnRateRoutes, sandboxBankRoutes } from './ach/returnRatesRoutes';

/**
 * Every API route, in one list: the api mounts it and /openapi.json documents it. It lives here, at the
 * composition root beside src/api.ts, so the HTTP layer never imports the features built on it.
 */
export const allRoutes: AnyRoute[] = [
  ...keyRoutes,
  ...userRoutes,
  ...bankAccountRoutes,
  ...achReturnRateRoutes,
  ...sandboxBankRoutes,
  ...ledgerRoutes,
  ...webhookRoutes,
  ...eventRoutes,
  ...refundRoutes,
  ...disputeRoutes,
  ...tokenRoutes,
  ...settlementRoutes,
  ...settlementReportRoutes,
  ...journalRoutes,
  ...limitRoutes,
  ...achRoutes,
];
