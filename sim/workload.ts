import { Api, Halted, sleep, type Answer, type Json } from './http';
import type { Model } from './model';
import type { Rng } from './rng';
import type { Receiver } from './receiver';

/**
 * The operations a client performs, each as a careful integrator would, and what each answer must satisfy.
 * The seed fixes each client's sequence of operation kinds and their parameters; which existing object an
 * operation targets is drawn from what the model holds at that moment, which depends on timing.
 */
export interface World {
  api: Api;
  model: Model;
  receiver: Receiver;
  webhookId: string;
  /** When the endpoint was registered: a replay asks for nothing older. */
  webhookCreatedAt: number;
  accountIds: string[];
  admin: (args: string[]) => Promise<{ code: number; json: Record<string, unknown>; text: string }>;
  /** Window dates close one after another: each close takes everything eligible by then. */
  nextWindowDate(): string;
}

const WEIGHTS = {
  intent: 30,
  batch: 5,
  replay: 8,
  conflict: 4,
  confirm: 6,
  refund: 6,
  dispute: 3,
  resolve: 2,
  achReturn: 5,
  closeWindow: 1.5,
  settleTransfer: 4,
  suspend: 1,
  enable: 2,
  newUser: 2,
  resend: 2,
  read: 14,
  list: 3,
  manual: 3,
  decide: 3,
  limits: 1.5,
  selfExclude: 0.3,
  metadata: 2,
  webhookReplay: 0.5,
} as const;
export type OpKind = keyof typeof WEIGHTS;

type Op = (world: World, rng: Rng) => Promise<void>;

const ROUTING = '021000021';
/** Return codes the sandbox bank is asked for; R01 (insufficient funds) most often, as in life. */
const RETURN_CODES = ['R01', 'R01', 'R01', 'R01', 'R02', 'R03', 'R08', 'R10', 'R16', 'R20'];

function expect(world: World, answer: Answer, statuses: number[], what: string): boolean {
  if (statuses.includes(answer.status)) return answer.status >= 200 && answer.status < 300;
  world.model.anomaly(`${what} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
  return false;
}

/** A POST whose answer the model keeps for a later replay. */
async function post(world: World, path: string, body: unknown): Promise<Answer> {
  const key = Api.newKey();
  const answer = await world.api.call('POST', path, body, key);
  if (answer.status < 300) world.model.remember({ path, key, body, status: answer.status, text: answer.text });
  return answer;
}

function intentBody(world: World, rng: Rng): Record<string, unknown> {
  const user = rng.pick(world.model.users);
  const direction = rng.chance(0.7) ? 'cash_in' : 'cash_out';
  const body: Record<string, unknown> = {
    direction,
    user_id: user.id,
    amount: rng.int(100, 50_000),
    currency: 'USD',
    account_id: rng.pick(world.accountIds),
  };
  if (user.bankAccountId && rng.chance(0.6)) body.bank_account_id = user.bankAccountId;
  return body;
}

const intent: Op = async (world, rng) => {
  const answer = await post(world, '/intent', intentBody(world, rng));
  if (expect(world, answer, [200], 'POST /intent')) world.model.intent(answer.json, answer.receivedAt);
};

const batch: Op = async (world, rng) => {
  const items = Array.from({ length: rng.int(2, 6) }, () => ({ idempotency_key: Api.newKey(), ...intentBody(world, rng) }));
  const answer = await post(world, '/intent/batch', { intents: items });
  if (!expect(world, answer, [200], 'POST /intent/batch')) return;
  for (const item of answer.json.data as Json[]) {
    if (item.status === 200) world.model.intent(item.intent, answer.receivedAt);
    else if (item.status >= 500) world.model.anomaly(`batch item ${item.idempotency_key} answered ${item.status}`);
  }
};

/** The same key and body again: the very same bytes, and nothing new. */
const replay: Op = async (world, rng) => {
  if (world.model.posts.length === 0) return;
  const original = rng.pick(world.model.posts);
  const again = await world.api.call('POST', original.path, original.body, original.key);
  if (again.status !== original.status || again.text !== original.text) {
    world.model.anomaly(
      `replay of ${original.path} key ${original.key} differs: ${original.status} ${original.text.slice(0, 200)} then ${again.status} ${again.text.slice(0, 200)}`,
    );
  }
};

/** A key used before, with another body: 422, and nothing is created (checked at the end). */
const conflict: Op = async (world, rng) => {
  const intents = world.model.posts.filter((entry) => entry.path === '/intent' && entry.status === 200);
  if (intents.length === 0) return;
  const original = rng.pick(intents);
  const body = { ...(original.body as Record<string, unknown>), amount: ((original.body as { amount: number }).amount % 49_000) + 101 };
  const answer = await world.api.call('POST', '/intent', body, original.key);
  world.model.conflicts += 1;
  if (answer.status !== 422 || !answer.text.includes('idempotency_key_reused')) {
    world.model.anomaly(`a reused key with another body answered ${answer.status}: ${answer.text.slice(0, 300)}`);
  }
};

function pickTransaction(
  world: World,
  rng: Rng,
  wanted: (txn: { direction: string; rank: number; bank: boolean; type: string }) => boolean,
) {
  const candidates = [...world.model.transactions.values()].filter(wanted);
  return candidates.length === 0 ? null : rng.pick(candidates);
}

const confirm: Op = async (world, rng) => {
  const txn = pickTransaction(world, rng, (t) => t.direction === 'cash_in' && t.rank === 0 && !t.bank);
  if (!txn) return;
  // 409 once the timer confirmed it first.
  expect(world, await post(world, `/simulate/transaction/${txn.id}/confirm`, undefined), [200, 409], 'confirm');
};

function approvedCashIns(world: World): string[] {
  return [...world.model.intents.values()].filter((i) => i.direction === 'cash_in' && i.status === 'approved').map((i) => i.id);
}

const refund: Op = async (world, rng) => {
  const intents = approvedCashIns(world);
  if (intents.length === 0) return;
  const intentId = rng.pick(intents);
  const amount = rng.int(1, world.model.intents.get(intentId)!.amount);
  // 400/409/422-style refusals when less is left (earlier refunds, a dispute or a return took it).
  const answer = await post(world, '/refund', { intent_id: intentId, amount });
  if (!expect(world, answer, [200, 400, 409], 'POST /refund')) return;
  world.model.refunds.set(answer.json.id, { intentId, amount: answer.json.amount });
  if (answer.json.amount !== amount) world.model.anomaly(`refund ${answer.json.id} of ${amount} recorded ${answer.json.amount}`);
  world.model.created(answer.json.transaction, answer.receivedAt, false);
};

const dispute: Op = async (world, rng) => {
  const intents = approvedCashIns(world);
  if (intents.length === 0) return;
  const answer = await post(world, '/simulate/dispute', { intent_id: rng.pick(intents) });
  if (expect(world, answer, [200, 400, 409], 'POST /simulate/dispute')) world.model.dispute(answer.json, answer.receivedAt, false);
};

const resolve: Op = async (world, rng) => {
  const open = [...world.model.disputes.entries()].filter(([, d]) => d.status === 'created').map(([id]) => id);
  if (open.length === 0) return;
  const id = rng.pick(open);
  const answer = await post(world, `/simulate/dispute/${id}/resolve`, { result: rng.chance(0.5) ? 'won' : 'lost' });
  if (expect(world, answer, [200, 409], 'resolve dispute')) world.model.dispute(answer.json, answer.receivedAt, false);
};

/** The simulated bank returns a settled debit; asked again (another key), it applies nothing more. */
const achReturn: Op = async (world, rng) => {
  const returned = [...world.model.returns.keys()];
  const again = returned.length > 0 && rng.chance(0.25);
  const txn = again
    ? world.model.transactions.get(rng.pick(returned))!
    : pickTransaction(world, rng, (t) => t.direction === 'cash_in' && t.type === 'intent' && t.bank && t.rank >= 1);
  if (!txn || (!again && world.model.returns.has(txn.id))) return;
  const answer = await post(world, '/simulate/ach/return', { transaction_id: txn.id, code: rng.pick(RETURN_CODES) });
  if (!expect(world, answer, [200, 409], 'POST /simulate/ach/return')) return;
  const before = world.model.returns.get(txn.id);
  const now = { entryId: answer.json.entry_id as string, disputeId: (answer.json.dispute_id ?? null) as string | null };
  if (before && (before.entryId !== now.entryId || before.disputeId !== now.disputeId)) {
    world.model.anomaly(`return of ${txn.id} again answered another return: ${JSON.stringify(before)} then ${JSON.stringify(now)}`);
  }
  world.model.returns.set(txn.id, before ?? now);
  if (!before && now.disputeId) {
    const disputeAnswer = await world.api.call('GET', `/dispute/${now.disputeId}`);
    if (expect(world, disputeAnswer, [200], 'GET /dispute')) world.model.dispute(disputeAnswer.json, disputeAnswer.receivedAt, true);
  }
};

const closeWindow: Op = async (world) => {
  const hadRefund = world.model.refunds.size > 0;
  const answer = await post(world, '/simulate/settlement', { date: world.nextWindowDate() });
  if (expect(world, answer, [200], 'POST /simulate/settlement') && hadRefund) world.model.closedAfterRefund = true;
};

const settleTransfer: Op = async (world, rng) => {
  const pending = await world.api.call('GET', '/transfer?status=pending&limit=20');
  if (!expect(world, pending, [200], 'GET /transfer') || pending.json.data.length === 0) return;
  const transfer = rng.pick(pending.json.data as Json[]);
  // 409 once it settled meanwhile.
  expect(world, await post(world, `/simulate/transfer/${transfer.id}/settle`, undefined), [200, 409], 'settle transfer');
};

const suspend: Op = async (world, rng) => {
  const user = rng.pick(world.model.users);
  expect(world, await post(world, `/simulate/user/${user.id}/suspend`, undefined), [200, 409], 'suspend user');
};

/** The operator brings a user back with the CLI (refused while self-excluded or from disabled: exit 1). */
const enable: Op = async (world, rng) => {
  const user = rng.pick(world.model.users);
  const answer = await world.admin(['user', 'set-status', user.id, 'enabled']);
  if (answer.code !== 0 && answer.code !== 1)
    world.model.anomaly(`admin user set-status answered exit ${answer.code}: ${answer.text.slice(0, 300)}`);
};

export async function createUser(world: World, rng: Rng, withBank: boolean): Promise<void> {
  const n = rng.int(1, 1_000_000);
  const answer = await post(world, '/user', {
    name: { first: 'Sim', last: `User${n}` },
    address: { address_line_1: '12 Market Street', locality: 'Newark', administrative_area: 'NJ', postal_code: '07102', country: 'US' },
    email: `sim${n}@example.com`,
    date_of_birth: '1990-12-10',
    government_id: { type: 'passport', last4: '6789' },
    identity_verified: true,
  });
  if (!expect(world, answer, [200], 'POST /user')) return;
  const user = { id: answer.json.id as string, bankAccountId: null as string | null };
  if (withBank) {
    const token = await post(world, '/token', {
      user_id: user.id,
      bank_account: { routing_number: ROUTING, account_number: String(rng.int(10_000_000, 99_999_999)) },
    });
    if (!expect(world, token, [200], 'POST /token')) return;
    const authorized = await post(world, '/authorize', {
      token: token.json.id,
      amount: rng.int(100, 20_000),
      currency: 'USD',
      direction: 'cash_in',
      account_id: world.accountIds[0],
    });
    if (!expect(world, authorized, [200], 'POST /authorize')) return;
    world.model.intent(authorized.json, authorized.receivedAt);
    user.bankAccountId = authorized.json.bank_account_id;
  }
  world.model.users.push(user);
}

const newUser: Op = (world, rng) => createUser(world, rng, rng.chance(0.6));

const resend: Op = async (world, rng) => {
  const seen = [...world.receiver.deliveries.keys()];
  if (seen.length === 0) return;
  const answer = await post(world, `/webhook/${world.webhookId}/resend`, { event_id: rng.pick(seen) });
  expect(world, answer, [200, 201, 202], 'resend');
};

const read: Op = async (world, rng) => {
  const txn = pickTransaction(world, rng, () => true);
  if (!txn) return;
  const answer = await world.api.call('GET', `/transaction/${txn.id}`);
  if (expect(world, answer, [200], 'GET /transaction/{id}')) world.model.observe(answer.json, answer.sentAt, answer.receivedAt);
};

const list: Op = async (world) => {
  const answer = await world.api.call('GET', '/transaction?limit=100');
  if (!expect(world, answer, [200], 'GET /transaction')) return;
  for (const txn of answer.json.data as Json[]) world.model.observe(txn, answer.sentAt, answer.receivedAt);
};

/** A cash_out for the operator to decide (approval_mode manual): pending, or declined at once (user, bank account). */
const manual: Op = async (world, rng) => {
  const answer = await post(world, '/intent', { ...intentBody(world, rng), direction: 'cash_out', approval_mode: 'manual' });
  if (!expect(world, answer, [200], 'POST /intent (manual)')) return;
  world.model.intent(answer.json, answer.receivedAt);
  if (answer.json.status !== 'pending' && answer.json.status !== 'declined')
    world.model.anomaly(`manual intent ${answer.json.id} answered ${answer.json.status}, neither pending nor declined`);
};

/**
 * The operator approves (approved with its transaction, or declined: limits, user status, bank account) or
 * cancels a pending intent; 409 once another client decided it.
 */
const decide: Op = async (world, rng) => {
  const pending = [...world.model.intents.values()].filter((intent) => intent.status === 'pending');
  if (pending.length === 0) return;
  const intent = rng.pick(pending);
  const action = rng.chance(0.7) ? 'approve' : 'cancel';
  const answer = await post(world, `/intent/${intent.id}/${action}`, undefined);
  if (!expect(world, answer, [200, 409], `${action} intent`)) return;
  const allowed = action === 'approve' ? ['approved', 'declined'] : ['canceled'];
  if (!allowed.includes(answer.json.status)) world.model.anomaly(`${action} of ${intent.id} answered ${answer.json.status}`);
  world.model.intent(answer.json, answer.receivedAt);
};

/** A user's limits set (SPEC §26): a lowered one at once, a raised one after the cooling-off; null: none. */
const limits: Op = async (world, rng) => {
  const user = rng.pick(world.model.users);
  const limit = () => (rng.chance(0.3) ? null : rng.int(50_000, 2_000_000));
  const body = { cash_in: { day: limit(), month: limit() }, cash_out: { day: limit(), week: limit() } };
  expect(world, await world.api.call('PUT', `/user/${user.id}/limits`, body), [200], 'PUT /user/{id}/limits');
};

/** A user excludes itself for two days (its intents are declined from then on); 409 for a created or disabled user. */
const selfExclude: Op = async (world, rng) => {
  const user = rng.pick(world.model.users);
  const until = new Date(Date.now() + 2 * 86_400_000).toISOString();
  expect(world, await post(world, `/user/${user.id}/self_exclusion`, { until }), [200, 409], 'POST /user/{id}/self_exclusion');
};

/** Metadata merged into an intent: the answer holds the key set, and the same money. */
const metadata: Op = async (world, rng) => {
  const intents = [...world.model.intents.keys()];
  if (intents.length === 0) return;
  const id = rng.pick(intents);
  const value = `note-${rng.int(1, 1_000_000)}`;
  const answer = await post(world, `/intent/${id}`, { metadata: { sim_note: value } });
  if (!expect(world, answer, [200], 'POST /intent/{id}')) return;
  if (answer.json.metadata?.sim_note !== value)
    world.model.anomaly(`intent ${id}'s metadata update answered ${JSON.stringify(answer.json.metadata)}`);
  // Not passed to the model's intent: a concurrent decision may answer before this older view arrives.
  const known = world.model.intents.get(id)!;
  if (answer.json.amount !== known.amount || answer.json.direction !== known.direction)
    world.model.anomaly(`intent ${id}'s metadata update changed its money: ${answer.json.direction} ${answer.json.amount}`);
};

/** The endpoint's last minute of events delivered again (each identical to its first delivery); 409 while one runs. */
const webhookReplay: Op = async (world) => {
  const since = new Date(Math.max(Date.now() - 60_000, world.webhookCreatedAt)).toISOString();
  expect(
    world,
    await post(world, `/webhook/${world.webhookId}/replay`, { created_at_gte: since }),
    [200, 201, 202, 409],
    'POST /webhook/{id}/replay',
  );
};

const OPS: Record<OpKind, Op> = {
  intent,
  batch,
  replay,
  conflict,
  confirm,
  refund,
  dispute,
  resolve,
  achReturn,
  closeWindow,
  settleTransfer,
  suspend,
  enable,
  newUser,
  resend,
  read,
  list,
  manual,
  decide,
  limits,
  selfExclude,
  metadata,
  webhookReplay,
};

/** One client: operations drawn from its own stream while `more()` says so. */
export async function runClient(world: World, rng: Rng, more: () => boolean): Promise<void> {
  while (more() && !world.api.isHalted()) {
    const kind = rng.weighted(WEIGHTS);
    world.model.count(kind);
    try {
      await OPS[kind](world, rng);
    } catch (error) {
      if (!(error instanceof Halted)) world.model.anomaly(`${kind}: ${(error as Error).message}`);
    }
    await sleep(rng.int(0, 40));
  }
}
