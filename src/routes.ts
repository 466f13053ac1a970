import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Config } from './config';
import { consoleRouter } from './console/serve';
import type { Registry } from 'prom-client';
import type { ApiDeps, AppFeatures } from './http/app';
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
import { registerAchGauges } from './ach/metrics';
import { registerReturnRateGauges } from './ach/returnRates';
import { achReturnRateRoutes, sandboxBankRoutes } from './ach/returnRatesRoutes';
import { achReturnListRoutes } from './ach/returnsListRoutes';
import { registerWebhookDocs } from './webhooks/openapi';

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
  ...achReturnListRoutes,
];

/** The features' gauges beside the edge's: the ACH rail's files and entries (SPEC §24) and return rates (§25). */
function registerFeatureGauges(registry: Registry, deps: ApiDeps): void {
  registerAchGauges(registry, deps.pool, deps.config);
  registerReturnRateGauges(registry, deps.pool);
}

/** What /openapi.json documents beside the routes: the request every webhook endpoint receives. */
export function registerFeatureDocs(registry: OpenAPIRegistry): void {
  registerWebhookDocs(registry);
}

/** What createApp mounts beside its shared edge: the routes (allRoutes unless a test or bench adds some), the console and the docs. */
export function appFeatures(config: Config, now: () => Date, routes: AnyRoute[] = allRoutes): AppFeatures {
  return { routes, console: consoleRouter(config, now), documentExtras: registerFeatureDocs, registerGauges: registerFeatureGauges };
}
