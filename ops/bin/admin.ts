/** `npm run admin -- <command> [--json]`: the operator CLI. */
import { runAdmin } from '../../src/cli/admin';
import { runMain } from '../run';

runMain(async () => {
  process.exitCode = await runAdmin(process.argv.slice(2));
});
