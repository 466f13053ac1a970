import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ensureTemporalCli } from '../../ops/goTools';
import { bundleWorkflowsOnce } from '../../ops/clusterProcesses';
import { createLogger } from '../../src/logger';
import { cloneScratchDatabase, createScratchDatabase, startScratchTemporal, topologyFrom, type ScratchTemporal } from './scratch';

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
    `SELECT datname FROM pg_database WHERE datname LIKE 'ledger_test_%' OR datname LIKE 'temporalSetupscratch_%'`,
  );
  for (const { datname } of rows) {
    const stamp = Number(datname.split('_')[2]);
    if (Number.isFinite(stamp) && Date.now() - stamp > STALE_DATABASE_MS)
      await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  }
  await admin.end();
  const database = `ledger_test_${Date.now()}_${process.pid}`;
  // Migrated once into a template no one connects to; the run's database and every suite's database of its
  // own (createTestDatabase) are copies of it, a second each instead of every migration again.
  const template = `${database}_template`;
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-test-'));
  // LEDGER_TEST_TEMPORAL=cluster (jest.cluster.config.js): the server `npm run cluster` runs, on Postgres.
  const topology = topologyFrom(process.env.LEDGER_TEST_TEMPORAL);
  // The three take seconds each and need nothing of one another: the database (Postgres' work), the Temporal
  // server (mostly waiting for it to answer) and the workflow bundle, built once for every suite's worker.
  const starting = startScratchTemporal(cliPath, path.join(workDir, 'temporal.log'), { dbFile: null, topology, adminUrl: baseUrl });
  const [databaseSetup, temporalSetup, bundleSetup] = await Promise.allSettled([
    createScratchDatabase(baseUrl, template).then(() => cloneScratchDatabase(baseUrl, template, database)),
    starting,
    bundleWorkflowsOnce(workDir, createLogger('warn', 'test-bundler')),
  ]);
  if (databaseSetup.status === 'rejected' || temporalSetup.status === 'rejected' || bundleSetup.status === 'rejected') {
    // A failed setup gets no teardown: stop the server that did start before failing the run.
    if (temporalSetup.status === 'fulfilled') await temporalSetup.value.stop();
    throw [databaseSetup, temporalSetup, bundleSetup]
      .map((each) => (each.status === 'rejected' ? (each.reason as unknown) : null))
      .find(Boolean);
  }
  const { databaseUrl } = databaseSetup.value;
  const temporal = temporalSetup.value;
  const bundlePath = bundleSetup.value;
  globalThis.__ledgerTemporal = temporal;
  const server = temporal.server;

  Object.assign(process.env, {
    LEDGER_TEST_DATABASE_URL: databaseUrl,
    LEDGER_TEST_DATABASE: database,
    LEDGER_TEST_TEMPLATE_DATABASE: template,
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
