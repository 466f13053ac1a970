import { achEntryReturnedSchema, achReturnRateExceededSchema, achTransferReturnedSchema, bankAccountUpdatedSchema } from '../ach/contract';
import { bankAccountSchema } from '../bankAccounts/contract';
import { disputeSchema } from '../disputes/contract';
import { intentSchema, transactionSchema, transactionStatusSchema } from '../ledger/contract';
import { limitsSchema } from '../limits/contract';
import { refundSchema } from '../refunds/contract';
import { transferSchema } from '../settlement/contract';
import { userSchema, userStatus } from '../users/contract';
import { z } from '../zod';
import type { EventType } from '../outbox';

/*
 * Each event type's body, `data` being the resource it carries as the API returns it. The resource schemas
 * are the ones the API answers with, so an event and GET of its resource cannot drift apart; a status change
 * adds what the status was before.
 */

// Spelled out rather than extended, so it does not inherit User's example, which lacks previous_status.
const userStatusChanged = z
  .object({ ...userSchema.shape, previous_status: userStatus.openapi({ description: 'The status before this change.' }) })
  .openapi('UserStatusChange', {
    example: {
      id: 'user_Q3kV9xLm2pR7tZ8wY1bN4cD6',
      tag: 'customer-8841',
      status: 'suspended',
      identity_verified: true,
      suspended_reason: null,
      self_excluded_until: null,
      metadata: {},
      created_at: '2026-11-21T14:03:12.511Z',
      previous_status: 'enabled',
    },
  });
// Spelled out rather than extended: Transaction is closed (additionalProperties false), so an allOf with it
// would refuse previous_status.
const transactionStatusChanged = z
  .strictObject({
    ...transactionSchema.shape,
    previous_status: transactionStatusSchema.openapi({ description: 'The status before this change.' }),
  })
  .openapi('TransactionStatusChange');

// A record, not a list, so an event type added to the outbox without a payload here fails to compile.
const DATA: { [T in EventType]: { schema: z.ZodType; name: string } } = {
  'user.created': { schema: userSchema, name: 'UserCreatedEvent' },
  'user.status_changed': { schema: userStatusChanged, name: 'UserStatusChangedEvent' },
  'user.updated': { schema: userSchema, name: 'UserUpdatedEvent' },
  'user.limits_changed': { schema: limitsSchema, name: 'UserLimitsChangedEvent' },
  'user.self_excluded': { schema: userSchema, name: 'UserSelfExcludedEvent' },
  'intent.approved': { schema: intentSchema, name: 'IntentApprovedEvent' },
  'intent.declined': { schema: intentSchema, name: 'IntentDeclinedEvent' },
  'intent.updated': { schema: intentSchema, name: 'IntentUpdatedEvent' },
  'transaction.created': { schema: transactionSchema, name: 'TransactionCreatedEvent' },
  'transaction.status_changed': { schema: transactionStatusChanged, name: 'TransactionStatusChangedEvent' },
  'transfer.created': { schema: transferSchema, name: 'TransferCreatedEvent' },
  'transfer.settled': { schema: transferSchema, name: 'TransferSettledEvent' },
  'refund.created': { schema: refundSchema, name: 'RefundCreatedEvent' },
  'dispute.created': { schema: disputeSchema, name: 'DisputeCreatedEvent' },
  'dispute.resolved': { schema: disputeSchema, name: 'DisputeResolvedEvent' },
  'ach_entry.returned': { schema: achEntryReturnedSchema, name: 'AchEntryReturnedEvent' },
  'ach.transfer_returned': { schema: achTransferReturnedSchema, name: 'AchTransferReturnedEvent' },
  'ach.return_rate_exceeded': { schema: achReturnRateExceededSchema, name: 'AchReturnRateExceededEvent' },
  'bank_account.disabled': { schema: bankAccountSchema, name: 'BankAccountDisabledEvent' },
  'bank_account.updated': { schema: bankAccountUpdatedSchema, name: 'BankAccountUpdatedEvent' },
};

function eventOf<T extends EventType>(type: T) {
  const { schema, name } = DATA[type];
  return z
    .object({
      id: z.string().openapi({ example: 'evt_9sKd2LmQ7rT4vX1nB8cZ3pWy' }),
      type: z.literal(type),
      created_at: z.string().openapi({ format: 'date-time' }),
      data: schema,
    })
    .openapi(name, { description: `A ${type} event: \`data\` is the resource it is about.` });
}

const EVENTS = (Object.keys(DATA) as EventType[]).map(eventOf);

/** An event exactly as webhooks deliver it and GET /event returns it (SPEC §12), told apart by `type`. */
export const webhookEventPayload = z
  .discriminatedUnion('type', EVENTS as unknown as [ReturnType<typeof eventOf>, ...ReturnType<typeof eventOf>[]])
  .openapi('WebhookEvent');
