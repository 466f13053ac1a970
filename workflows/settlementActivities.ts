import { proxyActivities } from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlement';

// Database work of a whole window: long single statements, kept alive by heartbeats so a killed worker is
// noticed in seconds; retried until it succeeds because every step is idempotent and must finish.
export const bulk = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export const quick = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
