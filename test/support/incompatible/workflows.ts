import { proxyActivities, sleep } from '@temporalio/workflow';
import type { LedgerActivities } from '../../../activities/ledger';
import type { TransactionWorkflowInput } from '../../../src/ledger/workflowContract';

// A deliberately incompatible edit of workflows/transaction.ts (a timer added before the first activity),
// used to prove that the replay test fails on such a change.
const { submitPayment } = proxyActivities<LedgerActivities>({ startToCloseTimeout: '30 seconds' });

export async function transactionWorkflow(input: TransactionWorkflowInput): Promise<string> {
  await sleep('1 second');
  const submitted = await submitPayment({ transactionId: input.transactionId });
  return submitted.status;
}
