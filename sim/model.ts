import type { Json } from './http';

/**
 * What the simulation believes exists, built only from the service's 2xx answers, and the checks every
 * answer meets as it arrives. The first anomaly recorded is the run's first divergence.
 */
export interface TxnModel {
  id: string;
  direction: 'cash_in' | 'cash_out';
  type: string;
  amount: number;
  sourceId: string;
  /** The highest status rank seen, and when the answer showing it arrived. */
  rank: number;
  rankSeenAt: number;
  bank: boolean;
}

export interface IntentModel {
  id: string;
  direction: string;
  amount: number;
  status: string;
  userId: string;
  bankAccountId: string | null;
  transactionId: string | null;
}

export interface PostRecord {
  path: string;
  key: string;
  body: unknown;
  status: number;
  text: string;
}

const RANK: Record<string, Record<string, number>> = {
  cash_in: { pending: 0, available: 1, settled: 2 },
  cash_out: { pending: 0, in_transfer: 1, settled: 2 },
};

export class Model {
  readonly anomalies: string[] = [];
  readonly transactions = new Map<string, TxnModel>();
  readonly intents = new Map<string, IntentModel>();
  readonly refunds = new Map<string, { intentId: string; amount: number }>();
  readonly disputes = new Map<string, { intentId: string; status: string; fromReturn: boolean }>();
  /** Returned transaction → the return's answer. */
  readonly returns = new Map<string, { entryId: string; disputeId: string | null }>();
  readonly users: Array<{ id: string; bankAccountId: string | null }> = [];
  /** Transfer → the times the operator presented it again after a return (`admin ach transfer represent` exit 0). */
  readonly presented = new Map<string, number>();
  readonly posts: PostRecord[] = [];
  readonly counts: Record<string, number> = {};
  /** Idempotency keys reused with another body: each must have created nothing. */
  conflicts = 0;
  /** A settlement window closed (200) while a refund existed: what double_refund_net needs to show. */
  closedAfterRefund = false;

  /**
   * Whether the run has done what an injected bug (SIM_INJECT_BUG, the negative controls) needs in order to
   * show: a return of a settled debit (it opens a dispute), enough transactions that one in four lacks its
   * lifecycle, a window closed over a refund. A control whose bug never ran proves nothing either way.
   */
  exercised(bug: string): boolean {
    if (bug === 'double_return') return [...this.returns.values()].some((r) => r.disputeId !== null);
    if (bug === 'skip_lifecycle_start') return this.transactions.size >= 20;
    if (bug === 'double_refund_net') return this.closedAfterRefund;
    return true;
  }

  anomaly(message: string): void {
    this.anomalies.push(`${new Date().toISOString()} ${message}`);
  }

  count(kind: string): void {
    this.counts[kind] = (this.counts[kind] ?? 0) + 1;
  }

  remember(post: PostRecord): void {
    // A bounded sample to replay: enough variety, bounded memory.
    if (this.posts.length < 2_000) this.posts.push(post);
    else this.posts[Math.floor(Math.random() * this.posts.length)] = post;
  }

  /** A transaction a 2xx answer created (or showed again): recorded once, then observed. */
  created(json: Json, at: number, bank: boolean): void {
    const id = json.id as string;
    if (!this.transactions.has(id)) {
      this.transactions.set(id, {
        id,
        direction: json.direction,
        type: json.type,
        amount: json.amount,
        sourceId: json.source_id,
        rank: -1,
        rankSeenAt: 0,
        bank,
      });
    }
    this.observe(json, at, at);
  }

  /** A transaction as an answer showed it: known, the same money, and a status never behind one seen before. */
  observe(json: Json, sentAt: number, receivedAt: number): void {
    const known = this.transactions.get(json.id as string);
    if (!known) return;
    if (known.amount !== json.amount || known.direction !== json.direction) {
      this.anomaly(`transaction ${known.id} changed money: was ${known.direction} ${known.amount}, now ${json.direction} ${json.amount}`);
    }
    const rank = RANK[known.direction]?.[json.status as string];
    if (rank === undefined) {
      this.anomaly(`transaction ${known.id} (${known.direction}) has status ${json.status}`);
      return;
    }
    // Only an answer whose request was sent after an earlier answer arrived can contradict it.
    if (rank < known.rank && sentAt > known.rankSeenAt) {
      this.anomaly(`transaction ${known.id} moved backward: rank ${known.rank} seen, then ${json.status}`);
    }
    if (rank > known.rank) {
      known.rank = rank;
      known.rankSeenAt = receivedAt;
    }
  }

  intent(json: Json, at: number): void {
    const transactions = (json.transactions ?? []) as Json[];
    const bank = json.bank_account_id !== null && json.bank_account_id !== undefined;
    const existing = this.intents.get(json.id as string);
    if (existing && existing.status !== json.status && !(existing.status === 'pending' && json.status !== 'pending')) {
      this.anomaly(`intent ${json.id} went from ${existing.status} to ${json.status}`);
    }
    this.intents.set(json.id as string, {
      id: json.id,
      direction: json.direction,
      amount: json.amount,
      status: json.status,
      userId: json.user_id,
      bankAccountId: json.bank_account_id ?? null,
      transactionId: (transactions[0]?.id as string | undefined) ?? existing?.transactionId ?? null,
    });
    if (json.status === 'approved' && transactions.length !== 1)
      this.anomaly(`approved intent ${json.id} has ${transactions.length} transactions`);
    if (json.status !== 'approved' && transactions.length !== 0) this.anomaly(`${json.status} intent ${json.id} has transactions`);
    for (const transaction of transactions) {
      if (transaction.amount !== json.amount || transaction.direction !== json.direction) {
        this.anomaly(`intent ${json.id} of ${json.direction} ${json.amount} made ${transaction.direction} ${transaction.amount}`);
      }
      this.created(transaction, at, bank);
    }
  }

  dispute(json: Json, at: number, fromReturn: boolean): void {
    const known = this.disputes.get(json.id as string);
    this.disputes.set(json.id as string, {
      intentId: json.intent_id,
      status: json.status,
      fromReturn: fromReturn || (known?.fromReturn ?? false),
    });
    for (const transaction of (json.transactions ?? []) as Json[]) this.created(transaction, at, false);
  }
}
