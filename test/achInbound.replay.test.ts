import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { testInfra } from './support/harness';
import { committedHistories } from './support/histories';

/**
 * Polls of the bank's inbound/ (workflows/achInbound.ts) recorded before its steps had a heartbeat timeout: one
 * poll that ingested two files. A replay matches a scheduled activity by its type and id, not its options, so the
 * running polls of a deployment replay unchanged on the code that sets one. Never re-recorded.
 */
const HISTORIES_DIR = path.join(__dirname, 'histories', 'ach-inbound');

test('polls recorded without a heartbeat timeout replay on the current code', async () => {
  const histories = committedHistories(HISTORIES_DIR);
  expect(histories.length).toBeGreaterThan(0);
  for (const { history } of histories) {
    const scheduled = (history.events ?? []).flatMap((event) => event.activityTaskScheduledEventAttributes ?? []);
    expect(scheduled.map((activity) => activity.activityType?.name)).toEqual(
      expect.arrayContaining(['sandboxBankSweep', 'listAchInbound', 'ingestAchInbound']),
    );
    // The older shape: no heartbeat timeout on any step.
    expect(scheduled.every((activity) => Number(activity.heartbeatTimeout?.seconds ?? 0) === 0)).toBe(true);
  }
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: testInfra().workflowBundlePath } }, histories)) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
  }
  expect(failures).toEqual([]);
});
