import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { HAND_OFF_ON_SETTLEMENT_DATE_PATCH } from '../src/settlement/contract';
import { testInfra } from './support/harness';
import { committedHistories as loadHistories, silentLogger } from './support/histories';

/** Histories of settlement workflows recorded from older workflow code (see test/settlement.calendar.test.ts). */
const HISTORIES_DIR = path.join(__dirname, 'histories', 'settlement');

const committedHistories = () => loadHistories(HISTORIES_DIR);

/**
 * workflows/settlement.ts as it is today but with the business-day hold NOT guarded by patched(): the edit the
 * replay must catch. Derived from the current source (in a scratch directory), so it never goes stale.
 */
function unguardedSettlementWorkflows(): string {
  const workflowsDir = path.join(__dirname, '..', 'workflows');
  const source = fs.readFileSync(path.join(workflowsDir, 'settlement.ts'), 'utf8');
  const guard = `patched(HAND_OFF_ON_SETTLEMENT_DATE_PATCH)`;
  expect(source).toContain(guard);
  const unguarded = source
    .replace(guard, 'true')
    .replace(/from '\.\/([^']+)'/g, (_m, file: string) => `from '${path.join(workflowsDir, file)}'`)
    .replace(/from '\.\.\/([^']+)'/g, (_m, file: string) => `from '${path.join(workflowsDir, '..', file)}'`);
  // Inside the repository (.scratch is ignored by git) so the bundler resolves @temporalio/* from node_modules.
  const scratch = path.join(workflowsDir, '..', '.scratch');
  fs.mkdirSync(scratch, { recursive: true });
  const dir = fs.mkdtempSync(path.join(scratch, 'unguarded-settlement-'));
  fs.writeFileSync(path.join(dir, 'workflows.ts'), unguarded);
  return path.join(dir, 'workflows.ts');
}

describe('SPEC §15 determinism guard: settlement executions started before the business-day hold replay', () => {
  test('every committed settlement history replays against the current workflow code', async () => {
    const histories = committedHistories();
    expect(histories.length).toBeGreaterThanOrEqual(1);
    // Recorded before the patch existed: no marker of it anywhere.
    for (const { history } of histories) {
      expect(JSON.stringify(history.toJSON())).not.toContain(HAND_OFF_ON_SETTLEMENT_DATE_PATCH);
    }
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: testInfra().workflowBundlePath } }, histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
  });

  test('the guard is needed: the same hold without patched() fails the replay of those histories', async () => {
    const workflowsPath = unguardedSettlementWorkflows();
    let code: string;
    try {
      ({ code } = await bundleWorkflowCode({ workflowsPath, logger: silentLogger }));
    } finally {
      fs.rmSync(path.dirname(workflowsPath), { recursive: true, force: true });
    }
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { code } }, committedHistories())) {
      if (result.error) failures.push(result.error.name);
    }
    expect(failures.length).toBe(committedHistories().length);
    expect(failures.every((name) => name === 'DeterminismViolationError')).toBe(true);
  });
});
