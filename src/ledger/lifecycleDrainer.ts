import { status } from '@grpc/grpc-js';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import pg from 'pg';
import type { Logger } from 'pino';
import { backoffDelayMs, forEachBounded, interruptiblePause } from '../concurrency';
import { withTransaction, type Pool, type PoolClient } from '../db/pool';
import { temporalHealthy } from '../platform/temporal';
import { deliverTemporalCommand, type DeliveryResult } from '../platform/temporalCommandDelivery';
import { claimTemporalCommands, settleTemporalCommands, type TemporalCommandRow } from '../platform/temporalCommands';
import { signalConfirmFunds, startTransactionWorkflow, sweepLifecycles } from './lifecycle';
import { LIFECYCLE_QUEUE_CHANNEL } from '../platform/lifecyclePoke';
import { claimLifecycleRows, settleLifecycleRows, type LifecycleQueueRow } from './lifecycleQueue';

/**
 * SPEC §20: writes never wait on Temporal. A write commits its transaction with a row in lifecycle_queue
 * (a workflow to start, a confirmation to signal) or in temporal_commands (any other start or signal: the one
 * road of issue 32, docs/temporal-road.md); every worker process runs one drainer that has Temporal accept
 * those rows, oldest first, and deletes them only once it has.
 *
 * What a crash can lose: nothing accepted. A row leaves the queue only in the database transaction that
 * also held its lock while Temporal accepted it. A drainer that dies before that commit leaves the row
 * (its lock goes with its connection) and the next pass repeats the call: a start answers already_started
 * (REJECT_DUPLICATE, counted as done), a confirmation reaches the running workflow once more (the signal
 * only sets a flag), a command's start or signal likewise (src/platform/temporalCommands.ts). A lost poke (the api died after commit, a LISTEN connection dropped) costs at most one
 * poll interval. Only a Temporal server that loses state it had acknowledged (the embedded dev server's
 * SQLite, ops/devServer.ts) can lose a started workflow; the start-up sweep (sweepLifecycles) covers that.
 */

export const LIFECYCLE_DRAIN_LIMITS = {
  /** Lifecycle rows locked per pass: one pass is one database transaction held while Temporal answers. */
  batchMax: 200,
  /**
   * Command rows (temporal_commands, issue 32) locked per pass beside them: their own share, so a full
   * lifecycle backlog never starves a window close or a webhook resend.
   */
  commandBatchMax: 50,
  /**
   * While lifecycle rows keep coming, a pass claims commands only if the last pass found some or this many ms
   * have passed: the claim is one more round trip (0.3 ms on an idle box, 1.5 ms on a busy one) that most
   * intake passes need not pay, and a command waits at most this long behind a busy lifecycle queue. A pass
   * after an idle one (the drainer was woken) always looks.
   */
  commandPollMs: 100,
  /** Temporal calls in flight per pass. */
  concurrency: 32,
  /** How long one start or signal may take before its row is given back (unanswered: due again at once). */
  callDeadlineMs: 5_000,
  /**
   * A row Temporal refused (an answer about that row, not silence) waits 250 ms doubling to 2 s before its next
   * attempt. A row Temporal did not answer in time is due again at once: the drainer waits for Temporal itself.
   */
  retryMsMin: 250,
  retryMsMax: 2_000,
  /**
   * After a pass that Temporal did not answer, a probe (GetSystemInfo, answered by the frontend alone) goes out
   * every probeEveryMs, each living probeDeadlineMs, so that several are always in flight: a server that
   * resumes (a SIGSTOP ends, a network partition heals) answers the newest at once and the drain goes on.
   */
  probeEveryMs: 250,
  probeDeadlineMs: 2_000,
  /** The fallback when no poke arrives (a lost NOTIFY, a row due after backoff). */
  pollMs: 1_000,
  /** Between LISTEN reconnects. */
  listenReconnectMs: 1_000,
  /** After a pass that found rows but not a full batch, the drainer lets this long's writes gather first. */
  gatherMs: 20,
};

export interface DrainDeps {
  pool: Pool;
  client: Client;
  taskQueue: string;
  log: Logger;
}

export interface DrainPass {
  claimed: number;
  /** A queue gave the pass all the rows it asked for: more may be due at once. */
  full: boolean;
  /** Command rows claimed (0 when the pass did not look). */
  commands: number;
  /** Workflows Temporal started in this pass (an already-started one is done, not counted here). */
  started: number;
  done: number;
  failed: number;
  /** The pass stopped because Temporal did not answer (a deadline passed, the server unreachable). */
  unanswered: boolean;
}

/** Whether a call failed for want of an answer (Temporal away), not because Temporal refused it. */
function unanswered(error: unknown): boolean {
  const cause = (error as Error | null)?.cause;
  const grpc = isGrpcServiceError(error) ? error : isGrpcServiceError(cause) ? cause : null;
  return grpc !== null && (grpc.code === status.DEADLINE_EXCEEDED || grpc.code === status.UNAVAILABLE);
}

/**
 * Resolves once Temporal answers a probe (or `stopped()`): overlapping probes, one every probeEveryMs, each
 * with probeDeadlineMs to live.
 */
function temporalAnswers(client: Client, stopped: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | null = null;
    const done = () => {
      if (timer) clearInterval(timer);
      timer = null;
      resolve();
    };
    const probe = () => {
      if (stopped()) return done();
      temporalHealthy(client, LIFECYCLE_DRAIN_LIMITS.probeDeadlineMs).then(done, () => undefined);
    };
    timer = setInterval(probe, LIFECYCLE_DRAIN_LIMITS.probeEveryMs);
    probe();
  });
}

/** One claimed row of either queue, as a call to make and the queue it leaves. */
interface Claimed {
  id: string;
  attempts: number;
  queue: 'lifecycle' | 'commands';
  call(): Promise<DeliveryResult | 'signalled' | 'already_closed'>;
}

function claimedLifecycleRow(deps: DrainDeps, row: LifecycleQueueRow): Claimed {
  const { client, taskQueue } = deps;
  return {
    id: row.queue_id,
    attempts: row.attempts,
    queue: 'lifecycle',
    call: () =>
      row.kind === 'start'
        ? startTransactionWorkflow(client, taskQueue, row.transaction)
        : signalConfirmFunds(client, taskQueue, row.transaction),
  };
}

function claimedCommand(deps: DrainDeps, row: TemporalCommandRow): Claimed {
  return { id: row.queueId, attempts: row.attempts, queue: 'commands', call: () => deliverTemporalCommand(deps.client, row.command) };
}

/** Locks a pass's rows: the lifecycle queue's batch, then the command queue's (issue 32), each oldest first. */
async function claimPass(
  deps: DrainDeps,
  db: PoolClient,
  limit: number,
  withCommands: boolean,
): Promise<{ lifecycle: number; commands: number; rows: Claimed[] }> {
  const lifecycle = await claimLifecycleRows(db, { taskQueue: deps.taskQueue, limit });
  const commands = withCommands
    ? await claimTemporalCommands(db, { drainQueue: deps.taskQueue, limit: LIFECYCLE_DRAIN_LIMITS.commandBatchMax })
    : [];
  return {
    lifecycle: lifecycle.length,
    commands: commands.length,
    rows: [...lifecycle.map((row) => claimedLifecycleRow(deps, row)), ...commands.map((row) => claimedCommand(deps, row))],
  };
}

/** Deletes the delivered rows of both queues and gives the failed ones their backoff. */
async function settlePass(db: PoolClient, done: readonly Claimed[], failed: ReadonlyArray<{ row: Claimed; retryAfterMs: number }>) {
  for (const queue of ['lifecycle', 'commands'] as const) {
    const settled = {
      doneIds: done.filter((row) => row.queue === queue).map((row) => row.id),
      failed: failed.filter((each) => each.row.queue === queue).map((each) => ({ id: each.row.id, retryAfterMs: each.retryAfterMs })),
    };
    await (queue === 'lifecycle' ? settleLifecycleRows(db, settled) : settleTemporalCommands(db, settled));
  }
}

/**
 * One pass: locks a batch of due rows of both queues, has Temporal accept each (bounded concurrency, a
 * deadline per call), deletes the accepted ones and gives the failed ones a backoff, in one database
 * transaction. After the first failure the pass starts nothing more (Temporal is likely down): those rows stay
 * as they were, in order.
 */
export async function drainLifecycleQueueOnce(
  deps: DrainDeps,
  limit = LIFECYCLE_DRAIN_LIMITS.batchMax,
  options: { commands: boolean } = { commands: true },
): Promise<DrainPass> {
  return withTransaction(deps.pool, async (db) => {
    const claimed = await claimPass(deps, db, limit, options.commands);
    const done: Claimed[] = [];
    const failed: Array<{ row: Claimed; retryAfterMs: number }> = [];
    let started = 0;
    let firstError: unknown = null;
    await forEachBounded(claimed.rows, LIFECYCLE_DRAIN_LIMITS.concurrency, async (row) => {
      if (firstError !== null) return;
      try {
        const deadline = Date.now() + LIFECYCLE_DRAIN_LIMITS.callDeadlineMs;
        if ((await deps.client.withDeadline(deadline, () => row.call())) === 'started') started += 1;
        done.push(row);
      } catch (error) {
        firstError ??= error;
        const retryAfterMs = unanswered(error)
          ? 0
          : backoffDelayMs(row.attempts + 1, LIFECYCLE_DRAIN_LIMITS.retryMsMin, LIFECYCLE_DRAIN_LIMITS.retryMsMax);
        failed.push({ row, retryAfterMs });
      }
    });
    await settlePass(db, done, failed);
    if (firstError !== null)
      deps.log.warn(
        { err: firstError, failed: failed.length, done: done.length },
        'Temporal refused queued starts or signals; they stay queued',
      );
    return {
      claimed: claimed.rows.length,
      full: claimed.lifecycle >= limit || claimed.commands >= LIFECYCLE_DRAIN_LIMITS.commandBatchMax,
      commands: claimed.commands,
      started,
      done: done.length,
      failed: failed.length,
      unanswered: unanswered(firstError),
    };
  });
}

/** A LISTEN connection that calls `heard` on every poke, reconnecting after a loss. */
function listenForPokes(pool: Pool, log: Logger, heard: () => void): { close(): Promise<void> } {
  let closed = false;
  let current: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;
  const connect = async () => {
    if (closed) return;
    const client = new pg.Client({ ...pool.options, application_name: 'ledger-lifecycle-drainer' });
    current = client;
    const lost = (error: unknown) => {
      if (current !== client || closed) return;
      current = null;
      log.debug({ err: error }, 'lifecycle queue LISTEN lost; polling until it is back');
      client.end().catch(() => undefined);
      retry = setTimeout(() => void connect(), LIFECYCLE_DRAIN_LIMITS.listenReconnectMs);
      retry.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('connection ended')));
    client.on('notification', heard);
    try {
      await client.connect();
      await client.query(`LISTEN ${LIFECYCLE_QUEUE_CHANNEL}`);
      // Rows queued while nobody listened.
      heard();
    } catch (error) {
      lost(error);
    }
  };
  void connect();
  return {
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      await current?.end().catch(() => undefined);
    },
  };
}

/** A wait that a poke ends early; a poke that arrives while the loop is busy ends the next wait at once. */
function pokeableWait() {
  const pause = interruptiblePause();
  let poked = false;
  return {
    poke() {
      poked = true;
      pause.wake();
    },
    async wait(ms: number): Promise<void> {
      if (!poked) await pause.pause(ms);
      poked = false;
    },
  };
}

/**
 * Drains the lifecycle queue of `taskQueue` until stopped: a pass right after a full one, gatherMs after a
 * partial one (a batch per pass, not a pass per write), else a wait for a poke or the poll; after a failed
 * pass, a backoff no poke shortens. `sweep`: also run the start-up sweep once (a Temporal server whose state
 * can roll back). One per worker process; any number share a queue.
 */
export function startLifecycleDrainer(deps: DrainDeps & { sweep?: boolean }): { stop(): Promise<void>; poke(): void } {
  let stopped = false;
  const signal = pokeableWait();
  const backoff = interruptiblePause();
  const listener = listenForPokes(deps.pool, deps.log, () => signal.poke());
  const sweeping: Promise<void> = deps.sweep
    ? sweepLifecycles(deps.pool, deps.client, deps.taskQueue, { stopped: () => stopped })
        .then((started) => {
          if (started > 0) deps.log.warn({ started }, 'start-up sweep started workflows the Temporal server had lost');
        })
        .catch((error: unknown) => deps.log.warn({ err: error }, 'start-up sweep failed'))
    : Promise.resolve();
  const loop = (async () => {
    let failures = 0;
    // Commands are claimed by a pass after an idle one or one that found commands, else every commandPollMs.
    let commandsClaimedAt = -Infinity;
    let lookForCommands = true;
    while (!stopped) {
      let pass: DrainPass | null = null;
      try {
        const commands = lookForCommands || performance.now() - commandsClaimedAt >= LIFECYCLE_DRAIN_LIMITS.commandPollMs;
        if (commands) commandsClaimedAt = performance.now();
        pass = await drainLifecycleQueueOnce(deps, LIFECYCLE_DRAIN_LIMITS.batchMax, { commands });
        lookForCommands = pass.claimed === 0 || pass.commands > 0;
      } catch (error) {
        lookForCommands = true;
        deps.log.warn({ err: error }, 'lifecycle drain pass failed; its rows stay queued');
      }
      if (stopped) break;
      failures = pass !== null && pass.failed === 0 ? 0 : failures + 1;
      if (pass?.unanswered) {
        await temporalAnswers(deps.client, () => stopped);
        await backoff.pause(LIFECYCLE_DRAIN_LIMITS.gatherMs);
      } else if (failures > 0)
        await backoff.pause(backoffDelayMs(failures, LIFECYCLE_DRAIN_LIMITS.retryMsMin, LIFECYCLE_DRAIN_LIMITS.retryMsMax));
      else if (pass!.claimed === 0) await signal.wait(LIFECYCLE_DRAIN_LIMITS.pollMs);
      else if (!pass!.full) await backoff.pause(LIFECYCLE_DRAIN_LIMITS.gatherMs);
    }
  })();
  return {
    poke: () => signal.poke(),
    async stop() {
      stopped = true;
      signal.poke();
      backoff.wake();
      await Promise.all([loop, sweeping]);
      await listener.close();
    },
  };
}
