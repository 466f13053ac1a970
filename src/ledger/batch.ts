import { ApiError, errors, type ErrorBody } from '../errors';
import type { EventType } from '../outbox';
import {
  advisoryLockId,
  requestHashOf,
  storeAnswers,
  storedResponsesOf,
  takeLocksWithin,
  type IdempotencyIdentity,
  type StoredResponse,
} from '../http/idempotency';
import { zodDetails } from '../http/input';
import { replayedAnswerText } from '../http/sealedAnswers';
import type { Environment } from '../http/apiKeys';
import type { Op, Outcome } from '../services';
import { lookupIntentPartiesOfMany } from './accounts';
import { renderIntent, type IntentRow } from './intents';
import { createIntentBody, type CreateIntentBody, type Intent, type IntentBatchEnvelope, type IntentBatchItemResult } from './schemas';
import { planIntent, recordIntents, withinLimits } from './service';

/**
 * POST /intent/batch (SPEC §19): each item is POST /intent with `X-Idempotency-Key: <its key>` — the same
 * idempotency records, validation, decision (planIntent) and events — done set-based, so the whole batch
 * costs a fixed number of round trips inside the batch's own database transaction, whatever its size.
 */

/** The endpoint every item stands for: its answers are stored, matched and replayed as POST /intent's. */
const ITEM_ENDPOINT = 'POST /intent';

interface ItemRequest {
  index: number;
  identity: IdempotencyIdentity;
  /** The item without its key: the body POST /intent would have been sent. */
  body: Record<string, unknown>;
  requestHash: string;
  lockId: string;
}

export interface IntentBatchContext {
  environment: Environment;
  /** The batch's own X-Idempotency-Key, which no item may reuse (its record is the batch's answer). */
  batchKey: string;
  requestId: string;
}

/** Where an item stands before the decision: answered already, or a valid body to decide. */
type Early = { result: IntentBatchItemResult } | { body: CreateIntentBody };

function itemRequests(organizationId: string, batch: IntentBatchEnvelope, batchKey: string): ItemRequest[] {
  return batch.intents.map((item, index) => {
    const { idempotency_key: key, ...body } = item;
    if (key === batchKey) {
      throw errors.validation([
        { param: `intents.${index}.idempotency_key`, message: "must differ from the batch's own X-Idempotency-Key" },
      ]);
    }
    const identity = { scope: 'header', key };
    return { index, identity, body, requestHash: requestHashOf(ITEM_ENDPOINT, body), lockId: advisoryLockId(organizationId, identity) };
  });
}

function errorResult(key: string, error: ApiError, requestId: string): IntentBatchItemResult {
  return { idempotency_key: key, status: error.status, error: error.toBody(requestId).error };
}

function replayResult(key: string, stored: StoredResponse, op: Op): IntentBatchItemResult {
  const answer = JSON.parse(replayedAnswerText(op.deps.config, stored.response_body)) as Intent | ErrorBody;
  if (stored.status_code < 300) return { idempotency_key: key, status: stored.status_code, intent: answer as Intent };
  return { idempotency_key: key, status: stored.status_code, error: (answer as ErrorBody).error };
}

/**
 * In POST /intent's order (SPEC §4: idempotency, then validation): a key still held by a request that did not
 * finish in time is 409; a stored answer replays, or is 422 for another body; then the body's own checks.
 */
function earlyOf(request: ItemRequest, taken: Set<string>, stored: StoredResponse | undefined, op: Op, requestId: string): Early {
  const { key } = request.identity;
  if (!taken.has(request.lockId)) return { result: errorResult(key, errors.idempotencyInProgress(), requestId) };
  if (stored) {
    const same = stored.endpoint === ITEM_ENDPOINT && stored.request_hash === request.requestHash;
    return { result: same ? replayResult(key, stored, op) : errorResult(key, errors.idempotencyKeyReused(), requestId) };
  }
  const parsed = createIntentBody.safeParse(request.body);
  if (!parsed.success) return { result: errorResult(key, errors.validation(zodDetails(parsed.error)), requestId) };
  return { body: parsed.data };
}

/** The decision of each item still to decide (one lookup for all); a refusal is that item's 400, as POST /intent's. */
async function planItems(
  op: Op,
  toPlan: ReadonlyArray<{ request: ItemRequest; body: CreateIntentBody }>,
  context: IntentBatchContext,
): Promise<Array<{ request: ItemRequest; intent: IntentRow } | { request: ItemRequest; refused: ApiError }>> {
  const parties = await lookupIntentPartiesOfMany(
    op.db,
    op.organizationId,
    toPlan.map(({ body }) => body),
  );
  return toPlan.map(({ request, body }, i) => {
    try {
      const planContext = {
        organizationId: op.organizationId,
        now: op.now,
        environment: context.environment,
        idempotencyKey: request.identity.key,
      };
      return { request, intent: planIntent(body, parties[i]!, planContext) };
    } catch (error) {
      if (error instanceof ApiError && error.status === 400) return { request, refused: error };
      throw error;
    }
  });
}

const DECISION_EVENTS: Partial<Record<IntentRow['status'], EventType>> = { approved: 'intent.approved', declined: 'intent.declined' };

/**
 * Records the decided intents as POST /intent would, each a statement for all: the intents with the approved
 * ones' transactions (their transaction.created events and workflow queue rows; recordIntents), then each
 * item's answer under its key with the decision events. Answers the rendered intents in the order given.
 */
async function recordDecided(
  op: Op,
  decided: ReadonlyArray<{ request: ItemRequest; intent: IntentRow }>,
): Promise<{ intents: Intent[]; afterCommit: () => void }> {
  const { recorded, afterCommit } = await recordIntents(
    op,
    decided.map(({ intent }) => intent),
  );
  const intents = recorded.map(({ intent, transaction }) => renderIntent(intent, transaction ? [transaction] : []));
  const events = intents.flatMap((intent) => {
    const type = DECISION_EVENTS[intent.status];
    return type ? [{ organizationId: op.organizationId, type, data: intent }] : [];
  });
  const records = decided.map(({ request }, i) => ({
    identity: request.identity,
    endpoint: ITEM_ENDPOINT,
    requestHash: request.requestHash,
    status: 200,
    text: JSON.stringify(intents[i]),
  }));
  // The decision events are recorded by the statement that stores the items' answers.
  await storeAnswers(op.db, { organizationId: op.organizationId, records, now: op.now, events });
  return { intents, afterCommit };
}

/**
 * Runs every item of a batch as its own POST /intent would run, inside the batch's transaction: the items'
 * keys locked (a concurrent POST /intent with one waits, then replays), their stored answers read, the rest
 * validated, decided and recorded together. One item's refusal is that item's answer; it stops no other.
 */
export async function createIntentBatch(
  op: Op,
  batch: IntentBatchEnvelope,
  context: IntentBatchContext,
): Promise<Outcome<{ data: IntentBatchItemResult[] }>> {
  const requests = itemRequests(op.organizationId, batch, context.batchKey);
  const taken = await takeLocksWithin(
    op.db,
    requests.map((request) => request.lockId),
  );
  const locked = requests.filter((request) => taken.has(request.lockId));
  const stored = await storedResponsesOf(
    op.db,
    op.organizationId,
    locked.map((request) => request.identity),
    op.now,
  );
  const storedOf = new Map(stored.map((row) => [row.key, row]));
  const results: IntentBatchItemResult[] = new Array<IntentBatchItemResult>(requests.length);
  const toPlan: Array<{ request: ItemRequest; body: CreateIntentBody }> = [];
  for (const request of requests) {
    const early = earlyOf(request, taken, storedOf.get(request.identity.key), op, context.requestId);
    if ('result' in early) results[request.index] = early.result;
    else toPlan.push({ request, body: early.body });
  }
  const planned = toPlan.length > 0 ? await planItems(op, toPlan, context) : [];
  const decided: Array<{ request: ItemRequest; intent: IntentRow }> = [];
  for (const item of planned) {
    if ('refused' in item) results[item.request.index] = errorResult(item.request.identity.key, item.refused, context.requestId);
    else decided.push(item);
  }
  if (decided.length === 0) return { body: { data: results } };
  // The limits decide after every item is planned, in request order: an item sees the use of the ones before it.
  const limited = await withinLimits(
    op,
    decided.map(({ intent }) => intent),
  );
  const { intents, afterCommit } = await recordDecided(
    op,
    decided.map(({ request }, i) => ({ request, intent: limited[i]! })),
  );
  decided.forEach(({ request }, i) => {
    results[request.index] = { idempotency_key: request.identity.key, status: 200, intent: intents[i]! };
  });
  return { body: { data: results }, afterCommit };
}
