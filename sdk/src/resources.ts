import type { OperationId } from './types.js';

/**
 * Every operation of the API as `ledger.<resource>.<method>`, by operationId. A test holds this table to the
 * generated document: an operation without a method here fails it.
 */
export const resources = {
  keys: { verify: 'verifyKey' },
  users: {
    create: 'createUser',
    retrieve: 'retrieveUser',
    update: 'updateUser',
    list: 'listUsers',
    selfExclude: 'createUserSelfExclusion',
    bankAccounts: 'listUserBankAccounts',
  },
  limits: { retrieve: 'retrieveUserLimits', update: 'updateUserLimits' },
  intents: {
    create: 'createIntent',
    createBatch: 'createIntentBatch',
    retrieve: 'retrieveIntent',
    update: 'updateIntent',
    list: 'listIntents',
    approve: 'approveIntent',
    cancel: 'cancelIntent',
    authorize: 'authorizePayment',
  },
  transactions: { retrieve: 'retrieveTransaction', list: 'listTransactions', achEntry: 'getTransactionAch' },
  accounts: {
    retrieve: 'retrieveAccount',
    list: 'listAccounts',
    balances: 'listAccountBalances',
    entries: 'listAccountEntries',
    statement: 'retrieveAccountStatement',
  },
  transfers: { retrieve: 'retrieveTransfer', list: 'listTransfers', report: 'retrieveTransferReport', achEntry: 'getTransferAch' },
  ach: { returnRates: 'listAchReturnRates', returns: 'listAchReturns', exceptions: 'listAchExceptions' },
  refunds: { create: 'createRefund', retrieve: 'retrieveRefund', list: 'listRefunds' },
  disputes: { retrieve: 'retrieveDispute', list: 'listDisputes' },
  tokens: { create: 'createToken', retrieve: 'retrieveToken' },
  webhooks: {
    create: 'createWebhook',
    retrieve: 'retrieveWebhook',
    list: 'listWebhooks',
    delete: 'deleteWebhook',
    deliveries: 'listWebhookDeliveries',
    resend: 'resendWebhook',
    replay: 'replayWebhook',
    retrieveReplay: 'retrieveWebhookReplay',
  },
  events: { retrieve: 'retrieveEvent', list: 'listEvents' },
  simulate: {
    suspendUser: 'simulateUserSuspend',
    confirmTransaction: 'simulateTransactionConfirm',
    dispute: 'simulateDispute',
    resolveDispute: 'simulateDisputeResolve',
    settlement: 'simulateSettlement',
    settleTransfer: 'simulateTransferSettle',
    achReturn: 'simulateAchReturn',
  },
  operations: {
    health: 'getHealth',
    readiness: 'getReadiness',
    metrics: 'getMetrics',
    openApiDocument: 'getOpenApiDocument',
    apiReference: 'getApiReference',
  },
} as const satisfies Record<string, Record<string, OperationId>>;
