/** When to try again and how long to wait first (SPEC §22). */

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;
/** A `Retry-After` longer than this is not waited for: the error goes to the caller. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** 409 `idempotency_request_in_progress`, 429 and every 5xx are worth another try with the same key. */
export function isRetryableStatus(status: number, code: string | undefined): boolean {
  return status === 429 || status >= 500 || (status === 409 && code === 'idempotency_request_in_progress');
}

/** `Retry-After` in milliseconds (seconds or an HTTP date), undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/**
 * The wait before retry number `retry` (0 first): the server's `Retry-After` when it sent one (plus up to 10 %
 * so clients told the same second do not return together), else exponential backoff with full jitter.
 */
export function retryDelayMs(retry: number, retryAfter: number | undefined, random: () => number = Math.random): number {
  if (retryAfter !== undefined) return retryAfter + Math.floor(random() * retryAfter * 0.1);
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** retry);
  return Math.floor(ceiling / 2 + random() * (ceiling / 2));
}
