// No imports: the delivery workflow imports this file, and workflow code must stay free of Node modules.

/** Limits of the webhook feature, every one explicit (TIGER_STYLE). */
export const WEBHOOK_LIMITS = {
  urlLengthMax: 2048,
  /** Endpoints one organization may have at once (deleted ones do not count). */
  endpointsPerOrganizationMax: 16,
  /** One HTTP attempt, connect to last byte (SPEC §12: 15 s per attempt). */
  attemptTimeoutMs: 15_000,
  /** One attempt's activity: the HTTP attempt plus DNS and the database writes around it. */
  attemptActivityTimeoutMs: 30_000,
  /** A worker that dies mid-attempt is noticed after this long without a heartbeat, and the retry moves on. */
  attemptHeartbeatTimeoutMs: 5_000,
  attemptHeartbeatMs: 1_000,
  /** Retry window of one (event, endpoint) delivery (SPEC §12: up to 3 days). */
  retryWindowMs: 3 * 24 * 60 * 60_000,
  /** Bytes of a receiver's answer read before the connection is dropped; the body is never stored. */
  responseBytesMax: 64 * 1024,
  errorLengthMax: 1000,
  /** Events one dispatcher pass claims. */
  dispatchBatchMax: 100,
  /** Workflow starts in flight at once during one dispatcher pass. */
  dispatchStartsConcurrentMax: 16,
  /** DNS answers considered for one target. */
  dnsAddressesMax: 32,
  dnsTimeoutMs: 5_000,
  /** Rows `admin webhook seal-secrets` seals per statement (and per progress line). */
  sealBatchMax: 500,
};
