import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { testInfra } from './support/harness';
import { committedHistories as loadHistories, silentLogger } from './support/histories';

const HISTORIES_DIR = path.join(__dirname, 'histories');

const committedHistories = () => loadHistories(HISTORIES_DIR);

describe('SPEC §9 determinism guard: recorded workflow histories replay against the current workflow code', () => {
  test('every committed history in test/histories replays without a nondeterminism error', async () => {
    const histories = committedHistories();
    expect(histories.length).toBeGreaterThanOrEqual(3);
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: testInfra().workflowBundlePath } }, histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
  });

  test('the guard works: a workflow edit that changes the command sequence fails the replay', async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: path.join(__dirname, 'support', 'incompatible', 'workflows.ts'),
      logger: silentLogger,
    });
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { code } }, committedHistories())) {
      if (result.error) failures.push(result.error.name);
    }
    expect(failures.length).toBe(committedHistories().length);
    expect(failures.every((name) => name === 'DeterminismViolationError')).toBe(true);
  });
});
