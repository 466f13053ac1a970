import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../src/config';
import { REPO, spawnProject, stopGracefully, TSX } from './support/processes';

/**
 * Issue 38: `npm run simulate` in CI, one short seed on the single topology (`npm start`: embedded Postgres,
 * Temporal dev server, api and worker in one process) with its seeded faults (SIGKILL and SIGSTOP of the
 * Temporal server, SIGSTOP of Postgres), and the checker's own negative control: the same kind of run with a
 * return applied twice (SIM_INJECT_BUG=double_return) must fail, naming the seed and the divergence.
 * The cluster topology's seeds are run by hand (docs/reliability.md has the record). The goal is one seed in
 * 3 minutes; the timeouts are wide because on the shared box (load average 30+) a start alone takes 90 s.
 */

const SEED = 38;

async function simulate(seed: number, env: Record<string, string> = {}) {
  const run = spawnProject(TSX, ['sim/main.ts', '--seed', String(seed), '--seconds', '30', '--topology', 'single', '--clients', '3'], env);
  try {
    const exit = await run.exited;
    return { code: exit.code, output: run.output() };
  } finally {
    await stopGracefully(run, 60_000);
  }
}

function resultOf(output: string): Record<string, any> {
  const file = /\[sim\] result: (\S+)/.exec(output)![1]!;
  expect(path.dirname(file)).toBe(path.join(REPO, 'bench', 'results'));
  const result = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.rmSync(file);
  return result;
}

describe('npm run simulate (issue 38)', () => {
  test('SIM_INJECT_BUG is off by default, takes only the named bugs, and production refuses it', () => {
    expect(loadConfig({}).SIM_INJECT_BUG).toBe('off');
    expect(loadConfig({ SIM_INJECT_BUG: 'double_return' }).SIM_INJECT_BUG).toBe('double_return');
    expect(() => loadConfig({ SIM_INJECT_BUG: 'lose_money' })).toThrow(ConfigError);
    const key = randomBytes(32).toString('base64');
    const production = { LEDGER_ENVIRONMENT: 'production', WEBHOOK_SECRET_KEY: key, BANK_DATA_KEY: key };
    expect(loadConfig(production).SIM_INJECT_BUG).toBe('off');
    expect(() => loadConfig({ ...production, SIM_INJECT_BUG: 'skip_lifecycle_start' })).toThrow(/SIM_INJECT_BUG=.*refused in production/);
  });

  test('a short seed on the single topology: the seed printed first, faults recovered, no anomaly, counts written', async () => {
    const { code, output } = await simulate(SEED);
    expect(output.split('\n')[0]).toMatch(new RegExp(`^\\[sim\\] seed ${SEED} `));
    if (code !== 0) throw new Error(`the simulation failed:\n${output.slice(-8_000)}`);
    const result = resultOf(output);
    expect(result.seed).toBe(SEED);
    expect(result.anomalies).toEqual([]);
    expect(result.faults.length).toBeGreaterThan(0);
    for (const fault of result.faults) expect(fault.recovered_ms).not.toBeNull();
    expect(result.operations.intent).toBeGreaterThan(10);
    expect(result.final.transactions).toBeGreaterThan(10);
    expect(result.final.events).toBeGreaterThan(result.final.transactions);
  }, 1_200_000);

  test('negative control: a return applied twice is caught, with the seed and the first divergence', async () => {
    const { code, output } = await simulate(SEED, { SIM_INJECT_BUG: 'double_return' });
    expect(code).toBe(1);
    expect(output).toContain(`FAILED seed ${SEED}`);
    expect(output).toMatch(/transactions exist that no 2xx answer created/);
    expect(resultOf(output).injected_bug).toBe('double_return');
  }, 1_200_000);
});
