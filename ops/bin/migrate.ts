/** `npm run migrate`: applies pending migrations to the configured database (a no-op when up to date). */
import { databaseUrlOf, loadConfig } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { runMain } from '../run';

runMain(async () => {
  const applied = await migrate(databaseUrlOf(loadConfig()));
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'up to date\n');
});
