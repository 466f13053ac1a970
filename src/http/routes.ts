import type { RouteDef } from './edge';
import { keyRoutes } from '../orgs/routes';
import { ledgerRoutes } from '../ledger/routes';
import { settlementRoutes } from '../settlement/routes';

/** Every API route, in one list: the app mounts it and /openapi.json documents it. */
export const allRoutes: RouteDef<any, any, any>[] = [ // eslint-disable-line @typescript-eslint/no-explicit-any
  ...keyRoutes,
  ...ledgerRoutes,
  ...settlementRoutes,
];
