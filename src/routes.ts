import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Config } from './config';
import { consoleRouter } from './console/serve';
import type { AppFeatures } from './http/app';
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
import { registerWebhookDocs } from './webhooks/openapi';

/**
 * Every API route, in one list: the api mounts it and /openapi.json documents it. It lives here, at the
 * composition root beside src/api.ts, so the HTTP layer never imports the features built on it.
 */
export const allRoutes: AnyRoute[] = [
  ...keyRoutes,
  ...userRoutes,
  ...bankAccountRoutes,
  ...ledgerRoutes,
  ...webhookRoutes,
  ...eventRoutes,
  ...refundRoutes,
  ...disputeRoutes,
  ...tokenRoutes,
  ...settlementRoutes,
  ...settlementReportRoutes,
  ...journalRoutes,
];

/** What /openapi.json documents beside the routes: the request every webhook endpoint receives. */
export function registerFeatureDocs(registry: OpenAPIRegistry): void {
  registerWebhookDocs(registry);
}

/** What createApp mounts beside its shared edge: the routes (allRoutes unless a test or bench adds some), the console and the docs. */
export function appFeatures(config: Config, now: () => Date, routes: AnyRoute[] = allRoutes): AppFeatures {
  return { routes, console: consoleRouter(config, now), documentExtras: registerFeatureDocs };
}
