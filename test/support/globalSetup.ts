import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ensureTemporalCli } from '../../ops/goTools';
import { bundleWorkflowsOnce } from '../../ops/clusterProcesses';
import { createLogger } from '../../src/logger';
import { createScratchDatabase, startScratchTemporal, topologyFrom, type ScratchTemporal } from './scratch';

/** Test databases older than this are leftovers of killed runs and are dropped. */
const STALE_DATABASE_MS = 6 * 60 * 60_000;

declare global {
  var __ledgerTemporal: ScratchTemporal | undefined;
}

/**
 * One real Postgres database (fresh, migrated) and one real Temporal server for the whole run (the CLI's dev
 * server in memory, or with LEDGER_TEST_TEMPORAL=cluster the server of `npm run cluster` on Postgres); suites
 * isolate themselves by organization and task queue.
 */
export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const cliPath = await ensureTemporalCli();
  const baseUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>(
    `SELECT datname FROM pg_database WHERE datname LIKE 'ledger_test_%' OR datname LIKE 'temporal_scratch_%'`,
  );
  for (const { datname } of rows) {
    const stamp = Number(datname.split('_')[2]);
    if (Number.isFinite(stamp) && Date.now() - stamp > STALE_DATABASE_MS)
      await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  }
  await admin.end();
  const database = `ledger_test_${Date.now()}_${process.pid}`;
  const { databaseUrl } = await createScratchDatabase(baseUrl, database);

  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-test-'));
  // LEDGER_TEST_TEMPORAL=cluster (jest.cluster.config.js): the server `npm run cluster` runs, on Postgres.
  const topology = topologyFrom(process.env.LEDGER_TEST_TEMPORAL);
  const temporal = await startScratchTemporal(cliPath, path.join(workDir, 'temporal.log'), { dbFile: null, topology, adminUrl: baseUrl });
  globalThis.__ledgerTemporal = temporal;
  const server = temporal.server;

  // Bundling the workflows takes seconds; do it once and let every suite's worker load the bundle.
  const bundlePath = await bundleWorkflowsOnce(workDir, createLogger('warn', 'test-bundler'));

  Object.assign(process.env, {
    LEDGER_TEST_DATABASE_URL: databaseUrl,
    LEDGER_TEST_DATABASE: database,
    LEDGER_TEST_ADMIN_URL: baseUrl,
    LEDGER_TEST_TEMPORAL_ADDRESS: server.address,
    LEDGER_TEST_WORKFLOW_BUNDLE: bundlePath,
    LEDGER_TEST_TEMPORAL_CLI: cliPath,
    LEDGER_TEST_WORK_DIR: workDir,
  });
  process.stdout.write(
    `\n[globalSetup] Postgres ${database}, Temporal ${topology} ${server.address}, ready in ${Date.now() - started} ms\n`,
  );
}
