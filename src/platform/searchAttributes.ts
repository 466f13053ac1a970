import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

// Typed keys of the search attributes registered in src/platform/temporal.ts, shared by the clients that
// start workflows and the workflows that upsert them, so both spell them the same way. Pure: workflow code
// imports it.
export const OrganizationIdKey = defineSearchAttributeKey('OrganizationId', SearchAttributeType.KEYWORD);
export const AccountIdKey = defineSearchAttributeKey('AccountId', SearchAttributeType.KEYWORD);
export const TransactionStatusKey = defineSearchAttributeKey('TransactionStatus', SearchAttributeType.KEYWORD);
export const TransactionDirectionKey = defineSearchAttributeKey('TransactionDirection', SearchAttributeType.KEYWORD);
export const SettlementDateKey = defineSearchAttributeKey('SettlementDate', SearchAttributeType.KEYWORD);
export const TransferIdKey = defineSearchAttributeKey('TransferId', SearchAttributeType.KEYWORD);
/** Set by the Temporal scheduler on every workflow it starts: the firing's nominal time. */
export const ScheduledStartTimeKey = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);
