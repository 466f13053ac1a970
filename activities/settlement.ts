import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { forEachBounded } from '../src/concurrency';
import { withTransaction } from '../src/db/pool';
import { transferAssignedSignal, transferSettledSignal } from '../src/ledger/workflowContract';
import { takeSnapshots } from '../src/journal/repo';
import { windowBounds } from '../src/easternDates';
import { memberIdsPage } from '../src/ledger/transactions';
import { ledgerMetrics } from '../src/metrics';
import { railFor, type PaymentRail } from '../src/rails';
import { startAccountSettlement } from '../src/settlement/client';
import { SETTLEMENT_LIMITS, type MemberCursor, type TransferInfo } from '../src/settlement/workflowContract';
import { handOffTimeOf, transferDateOf, windowDateOfScheduledTime } from '../src/settlement/dates';
import * as repo from '../src/settlement/repo';
import type { ActivityDeps } from './deps';

/** Heartbeats every 2 s while `work` runs (one long SQL statement cannot heartbeat by itself). */
async function keepAlive<T>(work: () => Promise<T>, details?: () => unknown): Promise<T> {
  const context = Context.current();
  const timer = setInterval(() => context.heartbeat(details?.()), 2_000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * The last page of a window's fan-out closes the window: observes how long since its window workflow
 * started (workflow code keeps no clock of its own to report). A metric is no reason to fail the close.
 */
async function observeWindowClosed(deps: ActivityDeps): Promise<void> {
  const { workflowExecution } = Context.current().info;
  if (!workflowExecution) return;
  try {
    const { startTime } = await deps.temporal.workflow.getHandle(workflowExecution.workflowId, workflowExecution.runId).describe();
    ledgerMetrics.settlementWindowDurationSeconds.observe((Date.now() - startTime.getTime()) / 1000);
  } catch (error) {
    deps.log.warn({ err: error, workflow_id: workflowExecution.workflowId }, 'settlement window duration not observed');
  }
}

function transferInfo(row: repo.TransferRow): TransferInfo {
  return {
    transferId: row.id,
    amountCents: row.amount_cents,
    direction: row.direction,
    status: row.status,
    transactionCount: row.transaction_count,
  };
}

/** Settlement's activities: each one database transaction or one batch of Temporal calls, safe to repeat. */
export function createSettlementActivities(deps: ActivityDeps, rail: PaymentRail = railFor(deps.config)) {
  return {
    /** The window a schedule firing closes, from its nominal time and this deployment's cutoff. */
    async windowOfScheduledTime(input: { scheduledAt: string }): Promise<{ windowDate: string }> {
      return { windowDate: windowDateOfScheduledTime(new Date(input.scheduledAt), deps.config.SETTLEMENT_CUTOFF) };
    },

    /**
     * Starts the settlement workflow of every account with something eligible for the window (one page of
     * accounts per call), on this worker's task queue. Returns where the next page starts.
     */
    async startAccountSettlements(input: {
      windowDate: string;
      organizationId?: string | undefined;
      accountId?: string | undefined;
      afterAccountId: string | null;
    }): Promise<{ started: number; alreadyStarted: number; nextAfterAccountId: string | null }> {
      const { taskQueue } = Context.current().info;
      return keepAlive(async () => {
        const accountIds = await repo.accountsToSettle(deps.pool, { ...input, limit: SETTLEMENT_LIMITS.fanOutPageSize });
        const { rows } = await deps.pool.query<{ id: string; organization_id: string }>(
          `SELECT id, organization_id FROM accounts WHERE id = ANY($1)`,
          [accountIds],
        );
        let started = 0;
        let alreadyStarted = 0;
        await forEachBounded(rows, SETTLEMENT_LIMITS.fanOutConcurrency, async (row) => {
          const outcome = await startAccountSettlement(deps.temporal, taskQueue, {
            accountId: row.id,
            organizationId: row.organization_id,
            windowDate: input.windowDate,
          });
          if (outcome === 'started') started += 1;
          else alreadyStarted += 1;
        });
        const last = accountIds[accountIds.length - 1];
        const nextAfterAccountId = accountIds.length === SETTLEMENT_LIMITS.fanOutPageSize && last ? last : null;
        if (nextAfterAccountId === null) {
          // The window's close is every account's daily journal snapshot (SPEC §21); one set-based statement,
          // kept if already taken, and none for a window that has not ended yet (a sandbox close ahead of time).
          await takeSnapshots(deps.pool, windowBounds(input.windowDate, deps.config.SETTLEMENT_CUTOFF).end);
          await observeWindowClosed(deps);
        }
        return { started, alreadyStarted, nextAfterAccountId };
      });
    },

    /**
     * Builds window D's transfer for the account in one database transaction (or finds the one built before);
     * null when nothing is eligible.
     */
    async createTransfer(input: { accountId: string; windowDate: string }): Promise<TransferInfo | null> {
      const transferDate = transferDateOf(input.windowDate, deps.config.SETTLEMENT_CUTOFF, deps.config.SETTLEMENT_CALENDAR);
      const started = Date.now();
      const result = await keepAlive(() =>
        withTransaction(
          deps.pool,
          (tx) =>
            repo.createWindowTransfer(tx, { accountId: input.accountId, windowDate: input.windowDate, transferDate, now: new Date() }),
          // Its triggers' plans, made for the whole window, must not serve the small writes after it.
          { discardConnection: true },
        ),
      );
      if (result?.created) {
        ledgerMetrics.transfersTotal.inc({ direction: result.transfer.direction });
        if (result.cashOutCount > 0) ledgerMetrics.transitionsTotal.inc({ to_status: 'in_transfer' }, result.cashOutCount);
        deps.log.info(
          {
            transfer_id: result.transfer.id,
            account_id: input.accountId,
            window_date: input.windowDate,
            transaction_count: result.transfer.transaction_count,
            elapsed_ms: Date.now() - started,
          },
          'transfer created',
        );
      }
      return result ? transferInfo(result.transfer) : null;
    },

    /**
     * Signals the members of a transfer, page by page (newest first), starting after `after`: `assigned` to
     * each cash_out (it is now in_transfer), `settled` to every member. Heartbeats its cursor after every page
     * so a retry resumes there. Stops after a bounded number of pages and returns where to continue, so one
     * activity never runs unbounded. A member whose workflow is not running (finished, or not started yet: a
     * worker's lifecycle drainer starts it and it reads the row) is counted, not an error.
     */
    async notifyMembers(input: { transferId: string; kind: 'assigned' | 'settled'; after: MemberCursor }): Promise<{
      signalled: number;
      notRunning: number;
      next: MemberCursor;
    }> {
      const context = Context.current();
      const resumed = context.info.heartbeatDetails as MemberCursor | undefined;
      let cursor: MemberCursor = resumed ?? input.after;
      let signalled = 0;
      let notRunning = 0;
      const signal = input.kind === 'assigned' ? transferAssignedSignal : transferSettledSignal;
      return keepAlive(
        async () => {
          for (let page = 0; page < SETTLEMENT_LIMITS.notifyPagesPerActivity; page += 1) {
            const members = await memberIdsPage(deps.pool, {
              transferId: input.transferId,
              ...(input.kind === 'assigned' ? { direction: 'cash_out' as const } : {}),
              after: cursor,
              limit: SETTLEMENT_LIMITS.notifyPageSize,
            });
            await forEachBounded(members, SETTLEMENT_LIMITS.notifyConcurrency, async (member) => {
              try {
                await deps.temporal.workflow.getHandle(member.id).signal(signal, { transferId: input.transferId });
                signalled += 1;
              } catch (error) {
                if (!(error instanceof WorkflowNotFoundError)) throw error;
                notRunning += 1;
              }
            });
            const last = members[members.length - 1];
            if (members.length < SETTLEMENT_LIMITS.notifyPageSize || !last) return { signalled, notRunning, next: null };
            cursor = { createdAt: last.created_at.toISOString(), id: last.id };
            context.heartbeat(cursor);
          }
          return { signalled, notRunning, next: cursor };
        },
        () => cursor,
      );
    },

    /**
     * When the transfer may go to the rail (SPEC §15): the start of its settlement date, Eastern time. Read from
     * the row, so it is the date the transfer was built with whatever the calendar setting is today.
     */
    async transferHandOff(input: { transferId: string }): Promise<{ date: string; handOffAt: string }> {
      const transfer = await repo.getTransferRow(deps.pool, input.transferId);
      if (!transfer) throw ApplicationFailure.nonRetryable(`no transfer ${input.transferId}`, 'TransferMissing');
      return { date: transfer.date, handOffAt: handOffTimeOf(transfer.date).toISOString() };
    },

    /** Hands the transfer to the payment rail; says how its settlement will be known. */
    async submitTransfer(input: { transferId: string }): Promise<{ settleAfterSeconds: number | null }> {
      const transfer = await repo.getTransferRow(deps.pool, input.transferId);
      if (!transfer) throw ApplicationFailure.nonRetryable(`no transfer ${input.transferId}`, 'TransferMissing');
      const achEntry = (await deps.pool.query('SELECT 1 FROM ach_entries WHERE transfer_id = $1', [transfer.id])).rowCount === 1;
      const outcome = await rail.submitTransfer({
        transferId: transfer.id,
        accountId: transfer.account_id,
        direction: transfer.direction,
        amountCents: transfer.amount_cents,
        achEntry,
      });
      // No CCD entry (no operator bank account, SPEC §24): only an operator's or integration's signal settles it.
      if (!achEntry && outcome.kind === 'signal') {
        deps.log.warn(
          { transfer_id: transfer.id, account_id: transfer.account_id },
          'transfer has no ACH entry; it waits for a rail signal',
        );
      }
      await repo.markTransferSubmitted(deps.pool, transfer.id, new Date());
      return { settleAfterSeconds: outcome.kind === 'after_seconds' ? outcome.seconds : null };
    },

    /** The network settled it: the transfer and every member become settled in one database transaction. */
    async settleTransfer(input: { transferId: string }): Promise<{ changed: boolean }> {
      const started = Date.now();
      const result = await keepAlive(() =>
        withTransaction(deps.pool, (tx) => repo.settleTransfer(tx, input.transferId, new Date()), { discardConnection: true }),
      );
      if (result.changed) {
        ledgerMetrics.transitionsTotal.inc({ to_status: 'settled' }, result.transfer.transaction_count);
        deps.log.info(
          { transfer_id: input.transferId, transaction_count: result.transfer.transaction_count, elapsed_ms: Date.now() - started },
          'transfer settled',
        );
      }
      return { changed: result.changed };
    },
  };
}

export type SettlementActivities = ReturnType<typeof createSettlementActivities>;
