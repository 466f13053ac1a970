import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import pg from 'pg';
import { startTemporalDevServer, type DevServer } from '../../src/platform/devServer';
import { connectTemporal, registerSearchAttributes } from '../../src/platform/temporal';
import { ensureTemporalCli } from '../../src/platform/goTools';
import { WORKFLOWS_PATH } from '../../src/worker';
import { freePort } from './ports';
import { createScratchDatabase } from './scratch';

/** Test databases older than this are leftovers of killed runs and are dropped. */
const STALE_DATABASE_MS = 6 * 60 * 60_000;

declare global {
  var __ledgerTemporal: DevServer | undefined;
}

/**
 * One real Postgres database (fresh, migrated) and one real Temporal dev server (the built CLI, in memory)
 * for the whole run; suites isolate themselves by organization and task queue.
 */
export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const cliPath = await ensureTemporalCli();
  const baseUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'ledger_test_%'`);
  for (const { datname } of rows) {
    const stamp = Number(datname.split('_')[2]);
    if (Number.isFinite(stamp) && Date.now() - stamp > STALE_DATABASE_MS)
      await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  }
  await admin.end();
  const database = `ledger_test_${Date.now()}_${process.pid}`;
  const { databaseUrl } = await createScratchDatabase(baseUrl, database);

  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-test-'));
  const server = await startTemporalDevServer({
    cliPath,
    port: await freePort(),
    uiPort: null,
    dbFile: null,
    namespace: 'default',
    logFile: path.join(workDir, 'temporal.log'),
  });
  globalThis.__ledgerTemporal = server;
  const { connection } = await connectTemporal(server.address, 'default');
  await registerSearchAttributes(connection, 'default');
  await connection.close();

  // Bundling the workflows takes seconds; do it once and let every suite's worker load the bundle.
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger });
  const bundlePath = path.join(workDir, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, code);

  Object.assign(process.env, {
    LEDGER_TEST_DATABASE_URL: databaseUrl,
    LEDGER_TEST_DATABASE: database,
    LEDGER_TEST_ADMIN_URL: baseUrl,
    LEDGER_TEST_TEMPORAL_ADDRESS: server.address,
    LEDGER_TEST_WORKFLOW_BUNDLE: bundlePath,
    LEDGER_TEST_TEMPORAL_CLI: cliPath,
    LEDGER_TEST_WORK_DIR: workDir,
  });
  process.stdout.write(`\n[globalSetup] Postgres ${database}, Temporal ${server.address}, ready in ${Date.now() - started} ms\n`);
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => process.stderr.write(`[bundler] ${message}\n`),
  error: (message: string) => process.stderr.write(`[bundler] ${message}\n`),
};
