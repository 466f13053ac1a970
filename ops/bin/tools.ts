/** `npm run tools`: every binary the service and its tests use, built once (CI runs this before the tests). */
import { ensureAchcli, ensureClusterTools, ensureTemporalCli } from '../goTools';

(async () => {
  process.stdout.write(`${await ensureTemporalCli()}\n`);
  for (const binary of Object.values(await ensureClusterTools())) process.stdout.write(`${binary}\n`);
  process.stdout.write(`${await ensureAchcli()}\n`);
})().catch((error: Error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
