import { Context } from '@temporalio/activity';

/**
 * How often a running ACH step tells Temporal it is alive. The ACH workflows (workflows/achWindow.ts,
 * workflows/achInbound.ts) give their steps a heartbeat timeout of a few of these, so a step whose worker died is
 * retried on another worker within seconds, not after its start-to-close timeout (minutes).
 */
export const ACH_HEARTBEAT_MS = 2_000;

/** Runs `work` heartbeating every ACH_HEARTBEAT_MS until it ends. */
export async function heartbeating<T>(work: () => Promise<T>): Promise<T> {
  const context = Context.current();
  context.heartbeat();
  const timer = setInterval(() => context.heartbeat(), ACH_HEARTBEAT_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
