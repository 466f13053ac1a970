/** Runs `work` over `items` with at most `concurrency` in flight; the first failure rejects. */
export async function forEachBounded<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(lanes);
}

/**
 * A pause a loop can be woken from: `pause(ms)` resolves after `ms`, or at once when `wake()` is called (a
 * loop being stopped should not sit out its interval).
 */
export function interruptiblePause(): { pause: (ms: number) => Promise<void>; wake: () => void } {
  let waking: (() => void) | null = null;
  return {
    pause: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          waking = null;
          resolve();
        }
        waking = done;
      }),
    wake: () => waking?.(),
  };
}

/** The pause after the `failures`-th failure in a row: `initialMs`, doubled after each failure, at most `maxMs`. */
export function backoffDelayMs(failures: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** (failures - 1));
}

export interface RetryOptions {
  /** Gives up (throwing the last failure) once this much time has passed; 0 tries once. */
  timeoutMs: number;
  initialMs: number;
  maxMs: number;
  /** Whether a failure is worth another attempt (default: every failure is). */
  retryable?: (error: unknown) => boolean;
  /** Told before each pause: the attempt that failed (from 1), its error, and how long until the next. */
  onRetry?: (retry: { attempt: number; error: unknown; delayMs: number }) => void;
}

/**
 * Calls `attempt` until it resolves, pausing with exponential backoff (backoffDelayMs) between failures. A
 * failure that is not retryable, or one after `timeoutMs`, is thrown as is; the last pause is cut to the deadline.
 */
export async function retryWithBackoff<T>(attempt: (n: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (let n = 1; ; n += 1) {
    try {
      return await attempt(n);
    } catch (error) {
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0 || (options.retryable && !options.retryable(error))) throw error;
      const delayMs = Math.min(remainingMs, backoffDelayMs(n, options.initialMs, options.maxMs));
      options.onRetry?.({ attempt: n, error, delayMs });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
