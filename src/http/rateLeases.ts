import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Pool } from '../db/pool';
import { EDGE_LIMITS, leaseInterval, windowInterval } from './limits';
import { rowOf } from '../assert';

/**
 * The exact sliding-window rate limit (SPEC §4) without a database write per request: a process takes a
 * lease of slots from Postgres (rate_limit_lease, migrations/0013_edge_leases.sql), admits requests from it
 * in memory for at most `rateLeaseMs`, and settles it with what it really admitted. Why no organization is
 * ever admitted more than its limit in any 60 s window, across every process: docs/edge.md.
 */

export type RateKind = 'read' | 'write';

export interface RateState {
  admitted: boolean;
  limit: number;
  remaining: number;
  /** When the oldest counted request leaves the window (ms). */
  resetMs: number;
}

interface Lease {
  id: string;
  organizationId: string;
  kind: RateKind;
  limit: number;
  granted: number;
  used: number;
  /** Slots counted for this (organization, kind) when the lease was granted, this one excluded. */
  usedBefore: number;
  /** When the oldest of those stops counting, minus the window (ms); null when there were none. */
  oldestBeforeMs: number | null;
  /** The lease admits requests at or after this (app clock, ms)... */
  grantedAtMs: number;
  /** ...and until this, while not ended. */
  endsAtMs: number;
  firstMs: number;
  lastMs: number;
  grantedAtRealMs: number;
  ended: boolean;
  timer: NodeJS.Timeout | null;
}

interface Answer {
  lease_id: string | null;
  granted: number;
  rate_limit: number;
  used: number;
  oldest: Date | null;
}

interface Counter {
  lease: Lease | null;
  renewing: Promise<Answer> | null;
  /** Slots the next lease asks for. */
  wantSlots: number;
}

export class RateLimiter {
  private readonly counters = new Map<string, Counter>();
  private readonly settling = new Set<Promise<void>>();

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
  ) {}

  /** Admits one request of `kind` for the organization at `now`, or refuses it using nothing. */
  async take(organizationId: string, kind: RateKind, now: Date): Promise<RateState> {
    const nowMs = now.getTime();
    const counter = this.counterOf(organizationId, kind);
    for (let attempt = 0; attempt < EDGE_LIMITS.rateLeaseAttemptsMax; attempt++) {
      const lease = counter.lease;
      if (lease && !lease.ended && lease.used < lease.granted && nowMs <= lease.endsAtMs) return admitFrom(lease, nowMs);
      counter.renewing ??= this.renew(counter, organizationId, kind, now).finally(() => {
        counter.renewing = null;
      });
      const answer = await counter.renewing;
      if (answer.granted === 0) return refusal(answer, nowMs);
    }
    // Other requests of this process kept draining each fresh lease first: refuse rather than spin.
    return refusal(await this.ask({ organizationId, kind, now, wantSlots: 0, settle: null }), nowMs);
  }

  /** The state without admitting anything (a request refused before the rate limit still reports it). */
  async peek(organizationId: string, kind: RateKind, now: Date): Promise<RateState> {
    const nowMs = now.getTime();
    const lease = this.counters.get(counterKey(organizationId, kind))?.lease;
    if (lease && !lease.ended && nowMs <= lease.endsAtMs) return { ...stateOf(lease), admitted: false };
    return { ...refusal(await this.ask({ organizationId, kind, now, wantSlots: 0, settle: null }), nowMs), admitted: false };
  }

  /** Settles every lease this process holds, so its unused slots go back at once. */
  async close(): Promise<void> {
    for (const counter of this.counters.values()) if (counter.lease) this.endInBackground(counter, counter.lease);
    await Promise.all([...this.settling]);
  }

  private counterOf(organizationId: string, kind: RateKind): Counter {
    const key = counterKey(organizationId, kind);
    let counter = this.counters.get(key);
    if (!counter) {
      counter = { lease: null, renewing: null, wantSlots: EDGE_LIMITS.rateLeaseSlotsInitial };
      this.counters.set(key, counter);
    }
    return counter;
  }

  /** Ends the current lease (if any) and asks for the next in one round trip. */
  private async renew(counter: Counter, organizationId: string, kind: RateKind, now: Date): Promise<Answer> {
    const previous = counter.lease && !counter.lease.ended ? counter.lease : null;
    if (previous) {
      end(previous);
      counter.wantSlots = nextWant(previous);
    }
    counter.lease = null;
    const answer = await this.ask({ organizationId, kind, now, wantSlots: counter.wantSlots, settle: previous });
    if (answer.granted > 0 && answer.lease_id !== null) {
      const nowMs = now.getTime();
      const lease: Lease = {
        id: answer.lease_id,
        organizationId,
        kind,
        limit: answer.rate_limit,
        granted: answer.granted,
        used: 0,
        usedBefore: answer.used,
        oldestBeforeMs: answer.oldest?.getTime() ?? null,
        grantedAtMs: nowMs,
        endsAtMs: nowMs + EDGE_LIMITS.rateLeaseMs,
        firstMs: Number.POSITIVE_INFINITY,
        lastMs: Number.NEGATIVE_INFINITY,
        grantedAtRealMs: performance.now(),
        ended: false,
        timer: null,
      };
      // Ended on time even if no request comes, so its unused slots return and the span it claims shrinks.
      lease.timer = setTimeout(() => this.endInBackground(counter, lease), EDGE_LIMITS.rateLeaseMs);
      lease.timer.unref();
      counter.lease = lease;
    }
    return answer;
  }

  private endInBackground(counter: Counter, lease: Lease): void {
    if (lease.ended) return;
    end(lease);
    counter.wantSlots = nextWant(lease);
    if (counter.lease === lease) counter.lease = null;
    // A quiet (organization, kind) keeps nothing in memory: the map stays as large as the busy ones.
    if (counter.lease === null && counter.renewing === null) this.counters.delete(counterKey(lease.organizationId, lease.kind));
    const settled = this.pool
      .query(`SELECT rate_limit_settle($1, $2, $3, $4)`, [lease.id, lease.used, dateOrNull(lease.firstMs), dateOrNull(lease.lastMs)])
      .then(
        () => undefined,
        (error: unknown) => {
          // Harmless to exactness: the unsettled row keeps counting all its slots until its span leaves the window.
          this.log.warn({ err: error }, 'a rate-limit lease could not be settled; its slots return when its span leaves the window');
        },
      );
    this.settling.add(settled);
    void settled.finally(() => this.settling.delete(settled));
  }

  /** One round trip: settles `settle` (when given) and asks for `wantSlots` (0: only the current count). */
  private async ask(request: {
    organizationId: string;
    kind: RateKind;
    now: Date;
    wantSlots: number;
    settle: Lease | null;
  }): Promise<Answer> {
    const { organizationId, kind, now, wantSlots, settle } = request;
    const { rows } = await this.pool.query<Answer>({
      // Named: each connection parses and plans it once, then only executes it.
      name: 'rate_limit_lease',
      text: `SELECT lease_id::text, granted, rate_limit, used, oldest
               FROM rate_limit_lease(p_org => $1, p_kind => $2, p_now => $3, p_window => $4::interval, p_lease => $5::interval,
                                     p_want => $6, p_settle_lease => $7, p_settle_used => $8, p_settle_first => $9,
                                     p_settle_last => $10)`,
      values: [
        organizationId,
        kind,
        now,
        windowInterval,
        leaseInterval,
        wantSlots,
        settle?.id ?? null,
        settle?.used ?? null,
        settle ? dateOrNull(settle.firstMs) : null,
        settle ? dateOrNull(settle.lastMs) : null,
      ],
    });
    const answer = rowOf(rows, 'the rate-lease function answers one row');
    if (answer.rate_limit === null) throw new Error(`no organization ${organizationId}`);
    return answer;
  }
}

function counterKey(organizationId: string, kind: RateKind): string {
  return `${kind}:${organizationId}`;
}

function end(lease: Lease): void {
  lease.ended = true;
  if (lease.timer) clearTimeout(lease.timer);
}

/** Twice what the last lease used in a lease's length (or twice its size, if it ran dry), within bounds. */
function nextWant(lease: Lease): number {
  const elapsedMs = Math.max(1, performance.now() - lease.grantedAtRealMs);
  const perLease = lease.used >= lease.granted ? lease.granted * 2 : Math.ceil((lease.used * EDGE_LIMITS.rateLeaseMs) / elapsedMs) * 2;
  const shareMax = Math.max(1, Math.ceil(lease.limit * EDGE_LIMITS.rateLeaseLimitShareMax));
  return Math.min(shareMax, Math.max(EDGE_LIMITS.rateLeaseSlotsInitial, perLease));
}

function dateOrNull(ms: number): Date | null {
  return Number.isFinite(ms) ? new Date(ms) : null;
}

function admitFrom(lease: Lease, nowMs: number): RateState {
  // A request whose clock reading predates the grant is admitted at the grant: a lease never admits before it.
  const atMs = Math.max(nowMs, lease.grantedAtMs);
  lease.used++;
  if (atMs < lease.firstMs) lease.firstMs = atMs;
  if (atMs > lease.lastMs) lease.lastMs = atMs;
  return stateOf(lease);
}

function stateOf(lease: Lease): RateState {
  const oldestMs = Math.min(lease.oldestBeforeMs ?? Number.POSITIVE_INFINITY, lease.firstMs);
  return {
    admitted: true,
    limit: lease.limit,
    remaining: Math.max(0, lease.limit - lease.usedBefore - lease.used),
    resetMs: (Number.isFinite(oldestMs) ? oldestMs : lease.grantedAtMs) + EDGE_LIMITS.windowMs,
  };
}

function refusal(answer: Answer, nowMs: number): RateState {
  return {
    admitted: false,
    limit: answer.rate_limit,
    remaining: Math.max(0, answer.rate_limit - answer.used),
    resetMs: (answer.oldest?.getTime() ?? nowMs) + EDGE_LIMITS.windowMs,
  };
}
