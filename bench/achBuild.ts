/**
 * One ACH window's build in a process of its own, as the worker's build activity runs it (src/ach/files.ts
 * buildWindowFile), for bench/achLoad.ts. Configuration from the environment (loadConfig); the file may hold
 * BENCH_ACH_LOAD_ENTRIES entries (the goal's 100,000; a window file holds at most 10,000 otherwise).
 * Prints `building` when it starts the build and `built {json}` when it has committed.
 */
import { ACH_FILE_LIMITS, buildWindowFile } from '../src/ach/files';
import { databaseUrlOf, loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';

async function main(): Promise<void> {
  const config = loadConfig();
  ACH_FILE_LIMITS.entriesPerFileMax = Number(process.env.BENCH_ACH_LOAD_ENTRIES ?? 100_000);
  const pool = createPool(databaseUrlOf(config), 2);
  try {
    await pool.query('SELECT 1');
    process.stdout.write('building\n');
    const started = process.hrtime.bigint();
    const built = await buildWindowFile(pool, config, createLogger('warn'), `bench-${randomString(12)}`, new Date());
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    process.stdout.write(`built ${JSON.stringify({ ms, entries: built?.entryCount ?? 0 })}\n`);
  } finally {
    await pool.end();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
