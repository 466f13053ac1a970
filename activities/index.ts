import { createAchActivities } from './ach';
import { createAchInboundActivities } from './achInbound';
import type { ActivityDeps } from './deps';
import { createLedgerActivities } from './ledger';
import { createLimitsActivities } from './limits';
import { createSettlementActivities } from './settlement';
import { createWebhookActivities } from './webhooks';
import { createWebhookReplayActivities } from './webhookReplay';

export type { ActivityDeps };

/** The worker's activities, one factory per feature merged into one object. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createLedgerActivities(deps),
    ...createWebhookActivities(deps),
    ...createWebhookReplayActivities(deps),
    ...createSettlementActivities(deps),
    ...createLimitsActivities(deps),
    ...createAchActivities(deps),
    ...createAchInboundActivities(deps),
  };
}
