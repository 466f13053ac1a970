// The worker's workflows: every workflow type of the ledger is exported from here.
export { transactionWorkflow } from './transaction';
export * from './webhooks';
export { accountSettlementWorkflow, settlementWindowWorkflow } from './settlement';
export { settlementNotificationWorkflow } from './settlementNotification';
export { webhookReplayWorkflow } from './webhookReplay';
export { selfExclusionWorkflow } from './selfExclusion';
export { achWindowWorkflow } from './achWindow';
export { achInboundWorkflow } from './achInbound';
