/** Limits of the edge, every one explicit. */
export const EDGE_LIMITS = {
  bodyBytesMax: 64 * 1024,
  windowMs: 60_000,
  /** Failed authentications one address (an IPv6 /64) may make per window before every request from it gets 429. */
  authFailuresPerWindow: 20,
  idempotencyRetentionHours: 24,
  /** How long a duplicate waits for the original to finish before answering 409 in progress. */
  idempotencyWaitMs: 5_000,
  /** A waiting duplicate polls the original's lock with backoff between these pauses, holding no connection meanwhile. */
  idempotencyPollMsMin: 5,
  idempotencyPollMsMax: 100,
  idempotencyKeyLengthMax: 255,
  /** Expired idempotency records are deleted in batches of this many rows, so housekeeping never holds long locks. */
  idempotencyPurgeBatchRows: 5_000,
  /** Rate-limit leases that left the window, deleted per housekeeping statement. */
  rateLimitPurgeBatchRows: 5_000,
  /**
   * How long a process may admit requests from one lease of rate-limit slots (docs/edge.md). Also the longest
   * a lowered limit takes to bind, and the longest another process may be refused while this one holds slots.
   */
  rateLeaseMs: 1_000,
  /** The first lease of an (organization, kind) in a process asks for this many slots; later ones for twice what the last used. */
  rateLeaseSlotsInitial: 4,
  /** One lease never takes more than this share of the limit, so other processes find slots too. */
  rateLeaseLimitShareMax: 0.25,
  /** A request that keeps finding its process's fresh leases drained by others is refused after this many. */
  rateLeaseAttemptsMax: 16,
  /** Keys (and blocked failure buckets) held in memory per process; past it the cache starts again empty. */
  keyCacheEntriesMax: 10_000,
  /** The key cache's listener proves itself this often... */
  keyCacheHeartbeatMs: 200,
  /** ...and the cache answers only while the newest proof is younger than this (SPEC §4: a revoked key stops within 1 s). */
  keyCacheStaleMs: 700,
  /** A heartbeat unanswered this long means the listener's connection is gone. */
  keyCacheHeartbeatTimeoutMs: 2_000,
  keyCacheConnectTimeoutMs: 5_000,
  keyCacheReconnectMsMin: 100,
  keyCacheReconnectMsMax: 5_000,
  /**
   * Bounds on a write's transaction. A process that hangs (not dies) mid-request would otherwise hold its
   * idempotency lock and row locks forever; Postgres ends the session past these and rolls it back.
   */
  transactionStatementTimeoutMs: 30_000,
  transactionIdleTimeoutMs: 30_000,
};

/** What an idempotency key may hold (SPEC §5): 1 to idempotencyKeyLengthMax printable ASCII characters. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7e]+$/;

/** The rate-limit and failed-login window as a Postgres interval. */
export const windowInterval = `${EDGE_LIMITS.windowMs} milliseconds`;

/** A rate-limit lease's length as a Postgres interval. */
export const leaseInterval = `${EDGE_LIMITS.rateLeaseMs} milliseconds`;
