import { checkAchFiles } from './achFiles';
import type { SftpBank } from './bank';
import { sleep, type Json } from './http';
import type { World } from './workload';

/**
 * The end of a run: windows closed and transfers settled until every transaction is final, then everything
 * the service lists compared with the model.
 */

/**
 * Liveness after the load: the drain fails when nothing has become final for SIM_DRAIN_STALL_SECONDS (stuck), or
 * when it has not finished after SIM_DRAIN_SECONDS (too slow even so). On this 2-core box a cluster seed's drain
 * can progress slowly for minutes (docs/reliability.md); a stall is the bug a fixed deadline would hide among them.
 */
const STALL_MS = Number(process.env.SIM_DRAIN_STALL_SECONDS ?? 120) * 1000;
const FINAL_DEADLINE_MS = Number(process.env.SIM_DRAIN_SECONDS ?? 900) * 1000;
/** How often the drain closes another window, and asks the network again to settle a transfer. */
const CLOSE_EVERY_MS = 5_000;
const SETTLE_AGAIN_MS = 30_000;

/** Eligible for a window now: a cash_in available or a cash_out pending, in no transfer yet. */
function eligible(txn: Json): boolean {
  return (
    !txn.transfer &&
    ((txn.direction === 'cash_in' && txn.status === 'available') || (txn.direction === 'cash_out' && txn.status === 'pending'))
  );
}

/** Closes windows and settles transfers until every transaction the model knows is settled, or a stall, or the deadline. */
export async function drain(world: World, say: (line: string) => void): Promise<void> {
  const started = Date.now();
  let fewestOpen = Infinity;
  let progressAt = started;
  let lastReport = 0;
  let lastClose = 0;
  const asked = new Map<string, number>();
  for (;;) {
    // Only the open ones: listing every transaction each pass would load the very pool the lifecycles need.
    const open: Json[] = [];
    for (const status of ['pending', 'available', 'in_transfer']) open.push(...(await world.api.all(`/transaction?status=${status}`)));
    if (open.some(eligible) && Date.now() - lastClose > CLOSE_EVERY_MS) {
      lastClose = Date.now();
      await world.api.call('POST', '/simulate/settlement', { date: world.nextWindowDate() });
    }
    const pending = await world.api.all('/transfer?status=pending');
    for (const transfer of pending) {
      if (Date.now() - (asked.get(transfer.id) ?? 0) < SETTLE_AGAIN_MS) continue;
      asked.set(transfer.id, Date.now());
      await world.api.call('POST', `/simulate/transfer/${transfer.id}/settle`);
    }
    if (open.length === 0 && pending.length === 0) return;
    if (Date.now() - lastReport > 15_000) {
      lastReport = Date.now();
      say(
        `  draining: ${open.length} transactions not settled (${open.filter(eligible).length} eligible), ${pending.length} transfers pending`,
      );
    }
    if (open.length < fewestOpen) {
      fewestOpen = open.length;
      progressAt = Date.now();
    }
    const stalled = Date.now() - progressAt > STALL_MS;
    if (stalled || Date.now() - started > FINAL_DEADLINE_MS) {
      const sample = open.slice(0, 5).map((txn: Json) => `${txn.id} ${txn.direction}/${txn.type} ${txn.status}`);
      const why = stalled
        ? `none became final for ${STALL_MS / 1000} s (${Math.round((Date.now() - started) / 1000)} s after the load ended)`
        : `${FINAL_DEADLINE_MS / 1000} s after the load ended`;
      world.model.anomaly(`${open.length} transactions not final: ${why}: ${sample.join(', ')}`);
      return;
    }
    await sleep(3_000);
  }
}

function sameSet(world: World, what: string, listed: string[], modelled: Iterable<string>): void {
  const have = new Set(listed);
  const want = new Set(modelled);
  const extra = [...have].filter((id) => !want.has(id));
  const missing = [...want].filter((id) => !have.has(id));
  if (listed.length !== have.size) world.model.anomaly(`${what}: the list shows an id twice`);
  if (extra.length > 0) world.model.anomaly(`${extra.length} ${what} exist that no 2xx answer created: ${extra.slice(0, 5).join(', ')}`);
  if (missing.length > 0) world.model.anomaly(`${missing.length} ${what} answered 2xx are missing: ${missing.slice(0, 5).join(', ')}`);
}

/** Each transfer the exact net of its members; answers the transfers listed. */
async function checkTransfers(world: World, transactions: Json[]): Promise<Json[]> {
  const transfers = await world.api.all('/transfer');
  const members = new Map<string, Json[]>();
  for (const txn of transactions) {
    if (txn.status !== 'settled') continue;
    const transferId = txn.transfer?.id as string | undefined;
    if (!transferId) {
      world.model.anomaly(`settled transaction ${txn.id} names no transfer`);
      continue;
    }
    members.set(transferId, [...(members.get(transferId) ?? []), txn]);
  }
  for (const transfer of transfers) {
    const own = members.get(transfer.id) ?? [];
    members.delete(transfer.id);
    const net = own.reduce((sum: number, txn: Json) => sum + (txn.direction === 'cash_in' ? txn.amount : -txn.amount), 0);
    const signed = transfer.direction === 'disbursement' ? transfer.amount : -transfer.amount;
    if (signed !== net || transfer.transaction_count !== own.length || transfer.status !== 'settled') {
      world.model.anomaly(
        `transfer ${transfer.id} is ${transfer.direction} ${transfer.amount} of ${transfer.transaction_count} (${transfer.status}); its members net ${net} over ${own.length}`,
      );
    }
  }
  for (const [transferId] of members) world.model.anomaly(`transactions name transfer ${transferId}, which GET /transfer does not list`);
  return transfers;
}

async function checkReturns(world: World): Promise<void> {
  const returned = await world.api.all('/event?type=ach_entry.returned');
  const byTransaction = new Map<string, number>();
  // A transfer's CCD entry returned (the SFTP bank's): once per entry, each of a transfer the operator may present again.
  const transferEntries = new Map<string, number>();
  for (const event of returned) {
    if (event.data.transaction_id === null) transferEntries.set(event.data.id, (transferEntries.get(event.data.id) ?? 0) + 1);
    else byTransaction.set(event.data.transaction_id, (byTransaction.get(event.data.transaction_id) ?? 0) + 1);
  }
  for (const [entryId, count] of transferEntries) if (count !== 1) world.model.anomaly(`transfer entry ${entryId} returned ${count} times`);
  for (const [transactionId, count] of byTransaction) {
    if (count !== 1) world.model.anomaly(`transaction ${transactionId} returned ${count} times`);
    if (!world.model.returns.has(transactionId)) world.model.anomaly(`transaction ${transactionId} returned without a return asked`);
  }
  for (const [transactionId, answer] of world.model.returns) {
    if (!byTransaction.has(transactionId)) world.model.anomaly(`return of ${transactionId} answered 2xx but no ach_entry.returned`);
    if (!answer.disputeId) continue;
    // A refund's credit returned (the SFTP bank's files return credits too) is a dispute of the refunded intent.
    const txn = world.model.transactions.get(transactionId)!;
    const intentId = txn.type === 'refund' ? world.model.refunds.get(txn.sourceId)?.intentId : txn.sourceId;
    const disputes = await world.api.all(`/dispute?intent_id=${intentId}`);
    const byReturn = disputes.filter((d) => d.id === answer.disputeId);
    if (byReturn.length !== 1 || byReturn[0].transactions.length !== 1) {
      world.model.anomaly(
        `return of ${transactionId}: dispute ${answer.disputeId} listed ${byReturn.length} times, with ${byReturn[0]?.transactions.length} transactions`,
      );
    }
  }
}

/**
 * Never more taken back from an intent than it moved: its refunds, plus what its disputes' transactions moved
 * (a chargeback's cash_out; a won dispute's cash_in gives it back, and a returned credit's won dispute is that
 * cash_in alone: the refund or withdrawal the bank sent back).
 */
async function checkIntentMoney(world: World, transactions: Json[]): Promise<void> {
  const refunds = await world.api.all('/refund');
  const disputes = await world.api.all('/dispute');
  sameSet(
    world,
    'refunds',
    refunds.map((r: Json) => r.id),
    world.model.refunds.keys(),
  );
  sameSet(
    world,
    'disputes',
    disputes.map((d: Json) => d.id),
    world.model.disputes.keys(),
  );
  const taken = new Map<string, number>();
  for (const refund of refunds) taken.set(refund.intent_id, (taken.get(refund.intent_id) ?? 0) + refund.amount);
  for (const dispute of disputes) {
    const moved = (dispute.transactions as Json[]).reduce((sum, txn) => sum + (txn.direction === 'cash_out' ? txn.amount : -txn.amount), 0);
    taken.set(dispute.intent_id, (taken.get(dispute.intent_id) ?? 0) + moved);
  }
  for (const [intentId, cents] of taken) {
    const intent = world.model.intents.get(intentId);
    if (intent && cents > intent.amount) world.model.anomaly(`intent ${intentId} of ${intent.amount} had ${cents} taken back`);
  }
  void transactions;
}

/** JSON with object keys sorted: the same value whatever order the keys were written in. */
function canonical(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

async function checkEvents(world: World, since: string): Promise<number> {
  const deadline = Date.now() + 120_000;
  let events: Json[] = [];
  let undelivered: Json[] = [];
  do {
    events = await world.api.all(`/event?created_at.gte=${encodeURIComponent(since)}`);
    undelivered = events.filter((event) => !world.receiver.deliveries.get(event.id)?.delivered);
    if (undelivered.length === 0) break;
    await sleep(2_000);
  } while (Date.now() < deadline);
  if (undelivered.length > 0) {
    world.model.anomaly(
      `${undelivered.length} of ${events.length} events never delivered: ${undelivered
        .slice(0, 5)
        .map((e) => `${e.id} ${e.type}`)
        .join(', ')}`,
    );
  }
  for (const event of events) {
    const delivery = world.receiver.deliveries.get(event.id);
    if (!delivery) continue;
    if (delivery.bodies.size !== 1) world.model.anomaly(`event ${event.id} was delivered with ${delivery.bodies.size} different bodies`);
    const body = JSON.parse([...delivery.bodies][0]!);
    if (canonical(body) !== canonical(event)) world.model.anomaly(`event ${event.id}: delivered body differs from GET /event`);
  }
  if (world.receiver.badSignatures > 0) world.model.anomaly(`${world.receiver.badSignatures} deliveries with a bad signature`);
  return events.length;
}

export interface FinalCounts {
  transactions: number;
  intents: number;
  transfers: number;
  events: number;
  returns: number;
  ach_files: number;
  ach_entries: number;
}

export async function finalChecks(
  world: World,
  webhookCreatedAt: string,
  orgId: string,
  admin: World['admin'],
  say: (line: string) => void,
  bank: SftpBank | null,
): Promise<FinalCounts> {
  let stepStarted = Date.now();
  /** Each step of the final checks, with its seconds: they take a while on a loaded box. */
  const done = (what: string) => {
    say(`  final checks: ${what} (${((Date.now() - stepStarted) / 1000).toFixed(1)} s)`);
    stepStarted = Date.now();
  };
  const transactions = await world.api.all('/transaction');
  sameSet(
    world,
    'transactions',
    transactions.map((t: Json) => t.id),
    world.model.transactions.keys(),
  );
  for (const txn of transactions) {
    if (txn.status !== 'settled') world.model.anomaly(`transaction ${txn.id} is ${txn.status} at the end`);
    world.model.observe(txn, Date.now(), Date.now());
  }
  const intents = await world.api.all('/intent');
  sameSet(
    world,
    'intents',
    intents.map((i: Json) => i.id),
    world.model.intents.keys(),
  );
  const transfers = await checkTransfers(world, transactions);
  await checkIntentMoney(world, transactions);
  await checkReturns(world);
  done(`${transactions.length} transactions, ${intents.length} intents, ${transfers.length} transfers and their money compared`);
  const ach = await checkAchFiles(
    admin,
    world.model,
    transfers.map((transfer: Json) => transfer.id as string),
    bank,
  );
  done(`${ach.files} ACH files, ${ach.entries} entries read by achcli`);
  const accounts = await world.api.all('/account');
  for (const account of accounts) {
    const { pending, available, in_transfer: inTransfer } = account.balances;
    if (pending !== 0 || available !== 0 || inTransfer !== 0) {
      world.model.anomaly(
        `account ${account.id}: balances ${JSON.stringify(account.balances)} with every transaction settled (model: all 0)`,
      );
    }
  }
  const verified = await admin(['account', 'verify', '--org', orgId]);
  if (verified.code !== 0) world.model.anomaly(`account verify failed: ${verified.text.slice(0, 500)}`);
  done(`${accounts.length} accounts' balances and account verify`);
  const events = await checkEvents(world, webhookCreatedAt);
  done(`${events} events delivered and compared`);
  return {
    transactions: transactions.length,
    intents: intents.length,
    transfers: transfers.length,
    events,
    returns: world.model.returns.size,
    ach_files: ach.files,
    ach_entries: ach.entries,
  };
}
