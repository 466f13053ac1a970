import { ApplicationFailure } from '@temporalio/common';
import { rowOf } from '../src/assert';
import { withTransaction } from '../src/db/pool';
import { INVALID_TRANSITION, TRANSACTION_MISSING, type TransactionStatus } from '../src/ledger/workflowContract';
import { applyTransition, getTransactionRow, InvalidTransitionError } from '../src/ledger/transactions';
import { ledgerMetrics } from '../src/metrics';
import { railFor, type PaymentRail } from '../src/rails';
import type { ActivityDeps } from './deps';

/** The ledger's activities: each one Postgres transaction, safe to run again. */
export function createLedgerActivities(deps: ActivityDeps, rail: PaymentRail = railFor(deps.config)) {
  return {
    /**
     * Hands the payment to the rail. Returns the row's current status and, for a cash_in, how many seconds until the rail's funds
     * count as confirmed (null: only a confirmFunds signal confirms).
     */
    async submitPayment(input: { transactionId: string }): Promise<{ status: TransactionStatus; confirmAfterSeconds: number | null }> {
      const row = await getTransactionRow(deps.pool, input.transactionId);
      if (!row) throw ApplicationFailure.nonRetryable(`no transaction ${input.transactionId}`, TRANSACTION_MISSING);
      const { rows: facts } = await deps.pool.query<{ ach_entry: boolean; ach_settled: boolean; moved_by_bank: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM ach_entries WHERE transaction_id = $1) AS ach_entry,
                EXISTS (SELECT 1 FROM ach_entries WHERE transaction_id = $1 AND status IN ('settled', 'returned')) AS ach_settled,
                EXISTS (SELECT 1 FROM disputes WHERE id = $2 AND returns_credit) AS moved_by_bank`,
        [row.id, row.type === 'dispute' && row.direction === 'cash_in' ? row.source_id : null],
      );
      const fact = rowOf(facts, 'a SELECT of EXISTS answers one row');
      const outcome = await rail.submitPayment({
        transactionId: row.id,
        accountId: row.account_id,
        direction: row.direction,
        amountCents: row.amount_cents,
        achEntry: fact.ach_entry,
        movedByBank: fact.moved_by_bank,
      });
      if (outcome.kind === 'after_seconds') return { status: row.status, confirmAfterSeconds: outcome.seconds };
      // The network's answer is already in the ledger: the debit settled (or was returned, which settles it
      // first) before this lifecycle asked. The confirmation queued with that settlement may have reached
      // Temporal before this workflow existed (a lifecycle started late, or started again by the sweep), so it
      // is not waited for (issue 38).
      return { status: row.status, confirmAfterSeconds: fact.ach_settled ? 0 : null };
    },

    /**
     * Moves a transaction to `toStatus` through the ledger's one transition (applyTransition). Keyed by
     * (transaction id, target status): repeating it is a no-op.
     */
    async transitionTransaction(input: { transactionId: string; toStatus: TransactionStatus; transferId: string | null }): Promise<{
      status: TransactionStatus;
      changed: boolean;
      transferId: string | null;
    }> {
      try {
        const result = await withTransaction(deps.pool, (tx) =>
          applyTransition(tx, {
            transactionId: input.transactionId,
            toStatus: input.toStatus,
            transferId: input.transferId,
            now: new Date(),
          }),
        );
        // Committed, and made by this call (a repeat finds it done: changed is false).
        if (result.changed) ledgerMetrics.transitionsTotal.inc({ to_status: result.status });
        return { status: result.status, changed: result.changed, transferId: result.transferId };
      } catch (error) {
        if (error instanceof InvalidTransitionError) throw ApplicationFailure.nonRetryable(error.message, INVALID_TRANSITION);
        throw error;
      }
    },
  };
}

export type LedgerActivities = ReturnType<typeof createLedgerActivities>;
