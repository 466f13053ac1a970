import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { HAND_OFF_ON_SETTLEMENT_DATE_PATCH, NOTIFY_MEMBERS_IN_CHILD_PATCH } from '../src/settlement/workflowContract';
import { testInfra } from './support/harness';
import { committedHistories, patchIdsOf, silentLogger } from './support/histories';

/**
 * Histories of settlement workflows recorded from older workflow code: before the business-day hold and before
 * member notification had a child workflow of its own (both are patched in). Never re-recorded.
 */
const OLD_HISTORIES_DIR = path.join(__dirname, 'histories', 'settlement');
/** Histories of the current shape: the settlement, and the child workflows that told its members (recorded by test/settlement.calendar.test.ts). */
const CHILD_HISTORIES_DIR = path.join(__dirname, 'histories', 'settlement-notify-in-child');

const oldHistories = () => committedHistories(OLD_HISTORIES_DIR);
const childHistories = () => committedHistories(CHILD_HISTORIES_DIR);

type Histories = ReturnType<typeof committedHistories>;
type Bundle = Parameters<typeof Worker.runReplayHistories>[0]['workflowBundle'];

/** Each failed replay as `<workflow id>: <error name>: <message>`. */
async function replayFailures(workflowBundle: Bundle, histories: Histories): Promise<string[]> {
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories({ workflowBundle }, histories)) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${result.error.message}`);
  }
  return failures;
}

const currentBundle = (): Bundle => ({ codePath: testInfra().workflowBundlePath });

/**
 * The history as it stood after each of its workflow tasks completed: an execution that older code left at that
 * point (waiting for the network, between notification batches, ...) when the new code was deployed.
 */
function prefixesOf({ workflowId, history }: Histories[number]): Histories {
  const events = history.events ?? [];
  return events.flatMap((event, index) =>
    event.workflowTaskCompletedEventAttributes
      ? [{ workflowId, history: { events: events.slice(0, index + 1) } as temporal.api.history.v1.History }]
      : [],
  );
}

/**
 * workflows/settlement.ts as it is today with one patched() guard replaced by a constant: the edit a replay must
 * catch. Derived from the current source (in a scratch directory), so it never goes stale.
 */
async function bundleWithGuard(patchId: string, replacement: 'true' | 'false'): Promise<Bundle> {
  const workflowsDir = path.join(__dirname, '..', 'workflows');
  const source = fs.readFileSync(path.join(workflowsDir, 'settlement.ts'), 'utf8');
  const guard = `patched(${patchId === HAND_OFF_ON_SETTLEMENT_DATE_PATCH ? 'HAND_OFF_ON_SETTLEMENT_DATE_PATCH' : 'NOTIFY_MEMBERS_IN_CHILD_PATCH'})`;
  expect(source).toContain(guard);
  const edited =
    source
      .replace(guard, replacement)
      .replace(/from '\.\/([^']+)'/g, (_m, file: string) => `from '${path.join(workflowsDir, file)}'`)
      .replace(/from '\.\.\/([^']+)'/g, (_m, file: string) => `from '${path.join(workflowsDir, '..', file)}'`) +
    `export { settlementNotificationWorkflow } from '${path.join(workflowsDir, 'settlementNotification')}';\n`;
  // Inside the repository (.scratch is ignored by git) so the bundler resolves @temporalio/* from node_modules.
  const scratch = path.join(workflowsDir, '..', '.scratch');
  fs.mkdirSync(scratch, { recursive: true });
  const dir = fs.mkdtempSync(path.join(scratch, 'edited-settlement-'));
  try {
    fs.writeFileSync(path.join(dir, 'workflows.ts'), edited);
    const { code } = await bundleWorkflowCode({ workflowsPath: path.join(dir, 'workflows.ts'), logger: silentLogger });
    return { code };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('SPEC §10/§15 determinism guard: settlement executions started on older workflow code complete on the current code', () => {
  test('every committed older settlement history replays, start to finish, against the current workflow code', async () => {
    const histories = oldHistories();
    expect(histories.length).toBeGreaterThanOrEqual(1);
    // Recorded before either patch existed: no marker of them anywhere.
    for (const { history } of histories) expect(patchIdsOf(history)).toEqual([]);
    expect(await replayFailures(currentBundle(), histories)).toEqual([]);
  });

  test('an older execution left at any workflow task (telling members, waiting for the network, ...) is picked up by the current code', async () => {
    const prefixes = oldHistories().flatMap(prefixesOf);
    expect(prefixes.length).toBeGreaterThanOrEqual(5);
    expect(await replayFailures(currentBundle(), prefixes)).toEqual([]);
  });

  test('a settlement of the current shape and the child workflows that told its members replay against the current code', async () => {
    const histories = childHistories();
    expect(histories.map(({ workflowId }) => workflowId)).toEqual([
      'account_settlement_signal_settled',
      'member_notification_assigned',
      'member_notification_settled',
    ]);
    const settlement = histories.find(({ workflowId }) => workflowId === 'account_settlement_signal_settled')!;
    expect(patchIdsOf(settlement.history)).toEqual([NOTIFY_MEMBERS_IN_CHILD_PATCH, HAND_OFF_ON_SETTLEMENT_DATE_PATCH]);
    const childStarts = (settlement.history.events ?? []).filter((event) => event.startChildWorkflowExecutionInitiatedEventAttributes);
    expect(childStarts).toHaveLength(2);
    expect(await replayFailures(currentBundle(), histories)).toEqual([]);
  });

  test.each([
    ['the business-day hold', HAND_OFF_ON_SETTLEMENT_DATE_PATCH],
    ['notification in a child workflow', NOTIFY_MEMBERS_IN_CHILD_PATCH],
  ])('the guard is needed: %s without patched() fails the replay of the older histories', async (_name, patchId) => {
    const failures = await replayFailures(await bundleWithGuard(patchId, 'true'), oldHistories());
    expect(failures).toHaveLength(oldHistories().length);
    expect(failures.every((failure) => failure.includes(': DeterminismViolationError: '))).toBe(true);
  });

  test('the current-shape history tells its members through the child: the older path fails its replay', async () => {
    const settlement = childHistories().filter(({ workflowId }) => workflowId === 'account_settlement_signal_settled');
    const failures = await replayFailures(await bundleWithGuard(NOTIFY_MEMBERS_IN_CHILD_PATCH, 'false'), settlement);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain(': DeterminismViolationError: ');
  });
});
