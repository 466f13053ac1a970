/**
 * A warm spare's entry (`npm run cluster`, ops/warmSpare.ts): `spare.ts api` or `spare.ts worker` loads that
 * role's entry as if it had been started, so its imports run now and its runMain waits for the take-over
 * (ops/run.ts). Started through this file, a spare's command line never names the role's entry, so nothing
 * that finds the serving processes by it (ps, the tests, the simulation) mistakes a spare for one.
 */
import path from 'node:path';

const role = process.argv[2];
if (role !== 'api' && role !== 'worker') throw new Error(`ops/bin/spare.ts: the role is api or worker, not ${role}`);
const entry = path.join(__dirname, `${role}.ts`);
process.argv.splice(1, 2, entry);
import(entry).catch((error: unknown) => {
  process.stderr.write(`fatal: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
