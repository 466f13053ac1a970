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
  /** Quiet organizations whose rate-limit hits one housekeeping pass sheds. */
  rateLimitPurgeBatchCounters: 1_000,
  /**
   * Bounds on a write's transaction. A process that hangs (not dies) mid-request would otherwise hold its
   * idempotency lock and row locks forever; Postgres ends the session past these and rolls it back.
   */
  transactionStatementTimeoutMs: 30_000,
  transactionIdleTimeoutMs: 30_000,
};

/** The rate-limit and failed-login window as a Postgres interval. */
export const windowInterval = `${EDGE_LIMITS.windowMs} milliseconds`;
