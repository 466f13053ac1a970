import type { PoolClient } from 'pg';
import { achScheduleId, ensureAchSchedule } from '../src/ach/schedule';
import { randomString } from '../src/ids';
import { drainLifecycleQueueOnce, startLifecycleDrainer, type DrainDeps } from '../src/ledger/lifecycleDrainer';
import { createLogger } from '../src/logger';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, type Stack, type TestOrg } from './support/harness';
import { addBankAccount, statusOf } from './support/payments';

/**
 * Issue 38, liveness after a SIGKILL of the Temporal server: sandbox cash_ins with a bank account stayed
 * `pending` for good. Such a deposit's lifecycle waits for the confirmFunds signal its ACH debit's settlement
 * queues (src/ach/files.ts, settleFile), with no timer. That signal travels in temporal_commands, the lifecycle's
 * start in lifecycle_queue, and nothing ordered the two: after a Temporal restart the starts are a backlog that
 * takes longer than the ACH window to settle the debits (the sandbox settles them SANDBOX_CONFIRM_SECONDS after
 * they were recorded), so a drainer could deliver the confirmation first — to a workflow that did not exist yet,
 * which the road counts as delivered ("not running") and drops — and the lifecycle, started a moment later,
 * waited for it forever.
 *
 * The lifecycle covers it itself: submitPayment reads the debit's entry, and one already settled (or returned)
 * counts as confirmed (activities/ledger.ts). The interleaving is made here without timing: the stack runs no
 * drainer of its own (LIFECYCLE_DRAINER=off); a lock on the start row stands for another drainer whose pass
 * claimed it and is waiting on a slow Temporal, and this suite runs the second drainer's passes itself.
 */

describe('issue 38: an ACH deposit whose lifecycle starts late still becomes available', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: ReturnType<typeof apiClient>;
  let deps: DrainDeps;
  let held: PoolClient | null = null;
  let drainer: { stop(): Promise<void> } | null = null;

  const release = async () => {
    await held?.query('ROLLBACK');
    held?.release();
    held = null;
  };

  /** The commands queued for one workflow, oldest first, as `kind signal`. */
  const queuedFor = async (workflowId: string) =>
    (
      await stack.pool.query<{ kind: string; signal_name: string | null }>(
        `SELECT kind, signal_name FROM temporal_commands WHERE workflow_id = $1 ORDER BY id`,
        [workflowId],
      )
    ).rows.map((row) => `${row.kind} ${row.signal_name}`);

  /** A deposit from a new bank account (an ACH debit queued with it), and its transaction id. */
  const achDeposit = async (amountCents: number) => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const accountNumber = `8${randomString(10).replace(/[^0-9]/g, '3')}`.slice(0, 12);
    const { intent } = await addBankAccount(call, userId, { account_number: accountNumber }, amountCents);
    return intent.transactions[0].id as string;
  };

  /**
   * The ACH windows (SANDBOX_ACH_WINDOW_SECONDS) file the queued debits from now on: the schedule is created only
   * when a test wants its debits settled, so until then a debit stays queued.
   */
  const fileDebits = () => ensureAchSchedule(stack.temporal, stack.config.TEMPORAL_TASK_QUEUE, stack.config);

  /** Waits until the simulated bank settled the deposit's debit: its confirmation is queued in that same commit. */
  const debitSettled = (transactionId: string) =>
    eventually(
      async () => {
        const { rows } = await stack.pool.query<{ status: string }>(`SELECT status FROM ach_entries WHERE transaction_id = $1`, [
          transactionId,
        ]);
        return rows[0]?.status === 'settled' ? true : undefined;
      },
      60_000,
      `the ACH debit of ${transactionId} to settle`,
    );

  beforeAll(async () => {
    stack = await startStack({
      ownDatabase: true,
      env: { LIFECYCLE_DRAINER: 'off', SANDBOX_ACH_WINDOW_SECONDS: '1', SANDBOX_CONFIRM_SECONDS: '1' },
    });
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
    deps = { pool: stack.pool, client: stack.temporal, taskQueue: stack.config.TEMPORAL_TASK_QUEUE, log: createLogger('silent') };
  }, 120_000);

  afterEach(async () => {
    await release();
    await drainer?.stop();
    drainer = null;
  });

  afterAll(async () => {
    await stack?.temporal.schedule
      .getHandle(achScheduleId(stack.config.TEMPORAL_TASK_QUEUE))
      .delete()
      .catch(() => undefined);
    await stack?.stop();
  });

  test('a lifecycle whose debit has not settled waits for the settlement (the entry is read, not assumed)', async () => {
    // No ACH window has run in this suite yet (see fileDebits): the debit stays queued.
    const transactionId = await achDeposit(4_700);
    drainer = startLifecycleDrainer(deps);
    // Submitted to the rail: the submitPayment local activity's marker is in the lifecycle's history.
    const handle = stack.temporal.workflow.getHandle(transactionId);
    await eventually(
      async () => ((await handle.fetchHistory()).events ?? []).some((event) => event.markerRecordedEventAttributes) || undefined,
      30_000,
      `the lifecycle of ${transactionId} to submit the payment`,
    );
    expect((await call('GET', `/transaction/${transactionId}`)).body.status).toBe('pending');
    const { rows } = await stack.pool.query<{ status: string }>(`SELECT status FROM ach_entries WHERE transaction_id = $1`, [
      transactionId,
    ]);
    expect(rows.map((row) => row.status)).toEqual(['queued']);
    expect((await handle.describe()).status.name).toBe('RUNNING');

    await fileDebits();
    await debitSettled(transactionId);
    await statusOf(call, transactionId, 'available');
  }, 120_000);

  test('a confirmation that reaches Temporal before its lifecycle starts is dropped, and the deposit still becomes available', async () => {
    const transactionId = await achDeposit(2_500);
    held = await stack.pool.connect();
    await held.query('BEGIN');
    const locked = await held.query(`SELECT id FROM lifecycle_queue WHERE transaction_id = $1 AND kind = 'start' FOR UPDATE`, [
      transactionId,
    ]);
    expect(locked.rowCount).toBe(1);

    await fileDebits();
    await debitSettled(transactionId);
    expect(await queuedFor(transactionId)).toEqual(['signal confirmFunds']);

    // The second drainer's pass: the start is another's, so the workflow is not started by this pass, but its
    // confirmation goes: Temporal finds no workflow to signal, and the road counts it delivered ("not running").
    await drainLifecycleQueueOnce(deps);
    expect(await queuedFor(transactionId)).toEqual([]);
    await expect(stack.temporal.workflow.getHandle(transactionId).describe()).rejects.toThrow(/not found/i);

    // The first drainer gives the start back (its pass failed); the drainers go on, and the lifecycle, reading
    // its debit settled when it submits the payment, does not wait for the signal it missed.
    await release();
    drainer = startLifecycleDrainer(deps);
    await statusOf(call, transactionId, 'available');
  }, 120_000);

  test('a lifecycle that starts after its debit settled is available without the signal (one lost on the way)', async () => {
    const transactionId = await achDeposit(3_100);
    await fileDebits();
    await debitSettled(transactionId);
    // The confirmation never reaches this lifecycle: e.g. a dev server whose SQLite state rolled back after it
    // took the signal (ops/devServer.ts), whose workflow the start-up sweep starts again. What stays true is the
    // ledger's: the debit settled.
    const dropped = await stack.pool.query(`DELETE FROM temporal_commands WHERE workflow_id = $1 AND signal_name = 'confirmFunds'`, [
      transactionId,
    ]);
    expect(dropped.rowCount).toBe(1);

    drainer = startLifecycleDrainer(deps);
    await statusOf(call, transactionId, 'available');
  }, 120_000);
});
