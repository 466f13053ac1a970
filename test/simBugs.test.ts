/**
 * The simulation's negative controls (src/simBugs.ts, docs/reliability.md): SIM_INJECT_BUG is off unless named,
 * takes only the listed bugs, and production refuses to start with one.
 */
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../src/config';

test('SIM_INJECT_BUG is off by default, takes only the named bugs, and production refuses it', () => {
  expect(loadConfig({}).SIM_INJECT_BUG).toBe('off');
  expect(loadConfig({ SIM_INJECT_BUG: 'double_return' }).SIM_INJECT_BUG).toBe('double_return');
  expect(() => loadConfig({ SIM_INJECT_BUG: 'lose_money' })).toThrow(ConfigError);
  const key = randomBytes(32).toString('base64');
  const production = { LEDGER_ENVIRONMENT: 'production', WEBHOOK_SECRET_KEY: key, BANK_DATA_KEY: key };
  expect(loadConfig(production).SIM_INJECT_BUG).toBe('off');
  expect(() => loadConfig({ ...production, SIM_INJECT_BUG: 'skip_lifecycle_start' })).toThrow(/SIM_INJECT_BUG=.*refused in production/);
});
