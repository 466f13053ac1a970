/** Limits of the events API and its retention sweep, every one explicit (TIGER_STYLE). */
export const EVENT_LIMITS = {
  /** Events one DELETE statement of the retention sweep removes. */
  retentionDeleteBatchMax: 1_000,
  /** Batches one sweep pass deletes at most; the next pass, minutes later, goes on where it stopped. */
  retentionBatchesPerPassMax: 100,
  /**
   * An event stays while a delivery of it may still be retrying: the retry window (SPEC §12, 3 days) from its
   * dispatch or from its latest resend, plus a margin for a workflow started just before its dispatch commit.
   */
  deliveryHoldMs: 3 * 24 * 60 * 60_000 + 60 * 60_000,
  /** Types one `type` filter may name (each at most once). */
  typesPerFilterMax: 32,
  objectIdLengthMax: 100,
};
