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
