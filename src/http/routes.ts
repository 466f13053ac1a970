import type { AnyRoute } from './route';
import { keyRoutes } from '../orgs/routes';
import { userRoutes } from '../users/routes';
import { ledgerRoutes } from '../ledger/routes';
import { webhookRoutes } from '../webhooks/routes';
import { refundRoutes } from '../refunds/routes';
import { disputeRoutes } from '../disputes/routes';
import { tokenRoutes } from '../tokens/routes';
import { settlementRoutes } from '../settlement/routes';
import { settlementReportRoutes } from '../settlement/reportRoutes';

/** Every API route, in one list: the app mounts it and /openapi.json documents it. */
export const allRoutes: AnyRoute[] = [
  ...keyRoutes,
  ...userRoutes,
  ...ledgerRoutes,
  ...webhookRoutes,
  ...refundRoutes,
  ...disputeRoutes,
  ...tokenRoutes,
  ...settlementRoutes,
  ...settlementReportRoutes,
];
