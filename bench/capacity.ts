/**
 * Per-transaction costs on the production topology, for the capacity model of docs/production.md.
 *
 *   npx tsx bench/capacity.ts                            # 1,000 transactions, a few minutes
 *   BENCH_CAPACITY_N=2000 BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:55432/postgres npx tsx bench/capacity.ts
 *
 * Starts `npm run cluster`'s Temporal server (1.29.1, persistence and SQL visibility on Postgres, 4 history
 * shards) in two fresh databases and the ledger in a third (test/support/scratch.ts; all three dropped at the
 * end), one worker process and one api process (ops/bin/worker.ts, ops/bin/api.ts, as deployed; the webhook
 * dispatcher and the lifecycle drainer on, as in production; no webhook endpoints registered), then:
 *   0. idle: the same counters over BENCH_CAPACITY_IDLE_SECONDS (30) with no traffic, subtracted from the phases
 *      below pro rata (pollers, the dispatcher and the drainer cost something while idle);
 *   1. to available: BENCH_CAPACITY_N cash_in intents POSTed from 32 clients (SANDBOX_CONFIRM_SECONDS=1), until
 *      every one is `available` in Postgres;
 *   2. to settled: POST /simulate/settlement closes the window (every transaction is in one account, so the
 *      window's settlement workflows are shared by all of them: per transaction they are 1/N of a window); the
 *      transfer is dated the next day, so POST /simulate/transfer/{id}/settle has the simulated network settle
 *      it at once; until every transaction is `settled` and no workflow runs.
 * For each phase, per transaction: Postgres rows inserted/updated/deleted, commits (pg_stat_database
 * xact_commit) and statements (pg_stat_statements calls, when the extension is loaded) of each database,
 * bytes stored (pg_database_size, and pg_total_relation_size per ledger table), WAL bytes
 * (pg_current_wal_lsn; the whole Postgres server, so run it on a Postgres of its own), CPU ms of the Temporal
 * server, the worker, the api and Postgres (its server processes, when it runs on this machine). After each
 * phase, the histories of BENCH_CAPACITY_SAMPLE (20) lifecycle workflows: events, bytes (the encoded history)
 * and Temporal actions estimated from the events (one per workflow started, activity scheduled or retried,
 * timer started, signal received, search-attribute upsert, local-activity marker, child workflow started,
 * update accepted); after phase 2 also the settlement workflows' histories, divided by N.
 * Postgres counters reach pg_stat_database within a second or so of a transaction; each snapshot waits
 * BENCH_CAPACITY_QUIESCE_SECONDS (12) of quiet first. "commits" are pg_stat_database's xact_commit: every
 * transaction, read-only and single-statement ones included. Bytes stored are given twice: as the files grew
 * (dead rows of updates and deletes included, since autovacuum may be off and files do not shrink) and after a
 * final VACUUM FULL of the three databases (the data itself). Results: stdout and bench/results/capacity-<time>.json.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { REPO_ROOT } from '../src/config';
import { createPool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { createTestUser } from '../test/support/harness';
import { freePort } from '../test/support/ports';
import { createScratchDatabase, startScratchTemporal } from '../test/support/scratch';
import { cpuSeconds, localPostmaster, postgresCpuSeconds } from './cpu';
import { postJson } from './http';
import { startProcess, stopProcess } from './processes';
import { writeResults } from './results';

const N = Number(process.env.BENCH_CAPACITY_N ?? 1_000);
const SAMPLE = Number(process.env.BENCH_CAPACITY_SAMPLE ?? 20);
const IDLE_S = Number(process.env.BENCH_CAPACITY_IDLE_SECONDS ?? 30);
const QUIESCE_S = Number(process.env.BENCH_CAPACITY_QUIESCE_SECONDS ?? 12);
const CLIENTS = 32;
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const TASK_QUEUE = 'ledger-capacity';

const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value: number, digits = 1) => Number(value.toFixed(digits));

interface DatabaseCounters {
  bytes: number;
  commits: number;
  rollbacks: number;
  inserted: number;
  updated: number;
  deleted: number;
  statements: number | null;
  /** Open connections to the database when the snapshot was taken (pools keep idle ones: about the peak). */
  connections: number;
}

interface Snapshot {
  at: number;
  walBytes: number;
  /** pg_stat_wal (the whole server): WAL records and full-page images. */
  walRecords: number;
  walFullPageImages: number;
  databases: Record<string, DatabaseCounters>;
  ledgerTables: Record<string, number>;
  cpu: Record<string, number | null>;
}

type Role = 'ledger' | 'temporal' | 'temporal_visibility';

async function snapshot(
  admin: pg.Client,
  ledger: pg.Pool,
  names: Record<Role, string>,
  pids: { temporal_server: number; worker: number; api: number; postmaster: number | null },
  hasStatements: boolean,
): Promise<Snapshot> {
  const databases = {} as Record<string, DatabaseCounters>;
  for (const [role, name] of Object.entries(names)) {
    const { rows } = await admin.query(
      `SELECT pg_database_size(d.datname)::float8 AS bytes, s.xact_commit::float8 AS commits, s.xact_rollback::float8 AS rollbacks,
              s.tup_inserted::float8 AS inserted, s.tup_updated::float8 AS updated, s.tup_deleted::float8 AS deleted,
              ${hasStatements ? '(SELECT sum(calls)::float8 FROM pg_stat_statements p WHERE p.dbid = d.oid)' : 'NULL::float8'} AS statements,
              (SELECT count(*)::int FROM pg_stat_activity a WHERE a.datid = d.oid) AS connections
         FROM pg_database d JOIN pg_stat_database s ON s.datid = d.oid WHERE d.datname = $1`,
      [name],
    );
    databases[role] = rows[0] as DatabaseCounters;
  }
  const { rows: tables } = await ledger.query<{ name: string; bytes: number }>(
    `SELECT relname AS name, pg_total_relation_size(relid)::float8 AS bytes FROM pg_stat_user_tables WHERE schemaname = 'public'`,
  );
  const { rows: wal } = await admin.query<{ bytes: number; records: number; fpi: number }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS bytes, wal_records::float8 AS records, wal_fpi::float8 AS fpi FROM pg_stat_wal`,
  );
  return {
    at: performance.now(),
    walBytes: wal[0]!.bytes,
    walRecords: wal[0]!.records,
    walFullPageImages: wal[0]!.fpi,
    databases,
    ledgerTables: Object.fromEntries(tables.map((table) => [table.name, table.bytes])),
    cpu: {
      temporal_server: cpuSeconds(pids.temporal_server),
      worker: cpuSeconds(pids.worker),
      api: cpuSeconds(pids.api),
      postgres: postgresCpuSeconds(pids.postmaster),
    },
  };
}

/** Per-transaction deltas of `after` − `before`, less the idle rate over the same time. */
function perTransaction(before: Snapshot, after: Snapshot, idle: { before: Snapshot; after: Snapshot } | null, count: number) {
  const seconds = (after.at - before.at) / 1000;
  const idleSeconds = idle ? (idle.after.at - idle.before.at) / 1000 : 0;
  /** The phase's delta less what the idle phase did in as much time. */
  const net = (pick: (s: Snapshot) => number | null | undefined) => {
    const [a, b] = [pick(after), pick(before)];
    if (a === null || a === undefined || b === null || b === undefined) return null;
    let delta = a - b;
    if (idle) {
      const [ia, ib] = [pick(idle.after), pick(idle.before)];
      if (ia !== null && ia !== undefined && ib !== null && ib !== undefined) delta -= ((ia - ib) / idleSeconds) * seconds;
    }
    return delta / count;
  };
  const databases: Record<string, Record<string, number | null>> = {};
  for (const role of Object.keys(after.databases)) {
    const counters = (s: Snapshot) => s.databases[role]!;
    databases[role] = {
      // Sizes are not idle-corrected: nothing is stored while idle.
      bytes_stored: round((counters(after).bytes - counters(before).bytes) / count, 0),
      rows_inserted: round(
        net((s) => counters(s).inserted)!,
        2,
      ),
      rows_updated: round(
        net((s) => counters(s).updated)!,
        2,
      ),
      rows_deleted: round(
        net((s) => counters(s).deleted)!,
        2,
      ),
      commits: round(
        net((s) => counters(s).commits)!,
        2,
      ),
      rollbacks: round(
        net((s) => counters(s).rollbacks)!,
        2,
      ),
      statements: ((value) => (value === null ? null : round(value, 2)))(net((s) => counters(s).statements)),
    };
  }
  const ledgerTables = Object.fromEntries(
    Object.keys(after.ledgerTables)
      .map((name) => [name, round((after.ledgerTables[name]! - (before.ledgerTables[name] ?? 0)) / count, 0)] as const)
      .filter(([, bytes]) => bytes !== 0)
      .sort((a, b) => b[1] - a[1]),
  );
  const cpuMs = Object.fromEntries(
    Object.keys(after.cpu).map((kind) => [kind, ((value) => (value === null ? null : round(value * 1000, 2)))(net((s) => s.cpu[kind]))]),
  );
  const raw = (pick: (s: Snapshot) => number | null | undefined) => {
    const [a, b] = [pick(after), pick(before)];
    return a === null || a === undefined || b === null || b === undefined ? null : (a - b) / count;
  };
  return {
    seconds: round(seconds, 1),
    transactions: count,
    wal_bytes_without_idle_correction: round(
      raw((s) => s.walBytes)!,
      0,
    ),
    cpu_ms_without_idle_correction: Object.fromEntries(
      Object.keys(after.cpu).map((kind) => [kind, ((value) => (value === null ? null : round(value * 1000, 2)))(raw((s) => s.cpu[kind]))]),
    ),
    wal_bytes: round(
      net((s) => s.walBytes)!,
      0,
    ),
    wal_records: round(
      net((s) => s.walRecords)!,
      1,
    ),
    wal_full_page_images: round(
      net((s) => s.walFullPageImages)!,
      2,
    ),
    databases,
    ledger_table_bytes: ledgerTables,
    cpu_ms: cpuMs,
  };
}

const BILLABLE: Record<string, (event: proto.api.history.v1.IHistoryEvent) => number> = {
  WORKFLOW_EXECUTION_STARTED: () => 1,
  ACTIVITY_TASK_SCHEDULED: () => 1,
  // A retried activity is billed again: attempt 2 and up.
  ACTIVITY_TASK_STARTED: (event) => ((event.activityTaskStartedEventAttributes?.attempt ?? 1) > 1 ? 1 : 0),
  TIMER_STARTED: () => 1,
  WORKFLOW_EXECUTION_SIGNALED: () => 1,
  UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: () => 1,
  WORKFLOW_PROPERTIES_MODIFIED: () => 1,
  MARKER_RECORDED: (event) => (event.markerRecordedEventAttributes?.markerName === 'core_local_activity' ? 1 : 0),
  START_CHILD_WORKFLOW_EXECUTION_INITIATED: () => 1,
  WORKFLOW_EXECUTION_UPDATE_ACCEPTED: () => 1,
};

function eventTypeName(event: proto.api.history.v1.IHistoryEvent): string {
  return (proto.api.enums.v1.EventType[event.eventType ?? 0] ?? String(event.eventType)).replace(/^EVENT_TYPE_/, '');
}

/** Events, encoded bytes, estimated actions and workflow tasks of each history; their totals and per-history medians. */
async function histories(client: Client, runs: Array<{ workflowId: string; runId?: string }>) {
  const each: Array<{ events: number; bytes: number; actions: number; workflow_tasks: number; types: Record<string, number> }> = [];
  for (const run of runs) {
    const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    const events = history.events ?? [];
    const types: Record<string, number> = {};
    let actions = 0;
    for (const event of events) {
      const type = eventTypeName(event);
      types[type] = (types[type] ?? 0) + 1;
      actions += BILLABLE[type]?.(event) ?? 0;
    }
    const bytes = proto.api.history.v1.History.encode(history).finish().length;
    each.push({ events: events.length, bytes, actions, workflow_tasks: types.WORKFLOW_TASK_COMPLETED ?? 0, types });
  }
  const median = (pick: (h: (typeof each)[number]) => number) => {
    const sorted = each.map(pick).sort((a, b) => a - b);
    return sorted.length ? sorted[Math.floor(sorted.length / 2)]! : null;
  };
  const sum = (pick: (h: (typeof each)[number]) => number) => each.reduce((total, h) => total + pick(h), 0);
  return {
    count: each.length,
    median: {
      events: median((h) => h.events),
      bytes: median((h) => h.bytes),
      actions: median((h) => h.actions),
      workflow_tasks: median((h) => h.workflow_tasks),
    },
    total: { events: sum((h) => h.events), bytes: sum((h) => h.bytes), actions: sum((h) => h.actions) },
    event_types_of_first: each[0]?.types ?? {},
  };
}

/** Teardown steps (processes, Temporal, databases), run newest first at the end or on SIGINT/SIGTERM. */
const cleanup: Array<() => unknown> = [];

async function teardown(): Promise<void> {
  for (const step of cleanup.splice(0).reverse()) {
    try {
      await step();
    } catch (error) {
      say(`cleanup: ${(error as Error).message}`);
    }
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    say(`${signal}: cleaning up`);
    void teardown().finally(() => process.exit(130));
  });

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  try {
    say(`capacity bench: ${os.cpus().length} cores, ${N} transactions, ${CLIENTS} clients, sample of ${SAMPLE} histories`);
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'capacity-bench-'));
    cleanup.push(() => fs.rmSync(workDir, { recursive: true, force: true }));
    const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), { topology: 'cluster', adminUrl: PG_BASE });
    cleanup.push(() => temporal.stop());
    const { client } = temporal;
    const database = `ledger_capacity_${Date.now()}_${randomString(6)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`;
    const scratch = await createScratchDatabase(PG_BASE, database);
    cleanup.push(() => scratch.drop());

    const admin = new pg.Client({ connectionString: PG_BASE });
    await admin.connect();
    cleanup.push(() => admin.end());
    // startScratchTemporal names its two databases temporal_scratch_<time>_<our pid>[_visibility].
    const { rows: temporalDbs } = await admin.query<{ datname: string }>(
      `SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY length(datname)`,
      [`temporal\\_scratch\\_%\\_${process.pid}%`],
    );
    if (temporalDbs.length !== 2)
      throw new Error(`expected the 2 Temporal databases, found ${temporalDbs.map((d) => d.datname).join(', ')}`);
    const names: Record<Role, string> = {
      ledger: database,
      temporal: temporalDbs[0]!.datname,
      temporal_visibility: temporalDbs[1]!.datname,
    };
    const hasStatements =
      (await admin.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'`)).rowCount === 1 &&
      (await admin.query(`SELECT current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%' AS on`)).rows[0].on === true;
    const postmaster = await localPostmaster(admin);
    const { rows: settings } = await admin.query<{ version: string; max_connections: string }>(
      `SELECT version() AS version, current_setting('max_connections') AS max_connections`,
    );
    say(
      `Temporal server ${temporal.server.address}; databases ${Object.values(names).join(', ')}; ${settings[0]!.version.split(' on ')[0]}`,
    );
    say(
      `pg_stat_statements ${hasStatements ? 'on' : 'off (statement counts left out)'}; Postgres CPU ${postmaster ? 'measured' : 'not measured'}`,
    );

    const pool = createPool(scratch.databaseUrl, 4);
    cleanup.push(() => pool.end());
    const org = await createOrganization(pool, { name: 'Capacity', kycRequired: true, environment: 'sandbox' });
    await setRateLimits(pool, org.organization.id, { write: 1_000_000, read: 1_000_000 });
    const userId = await createTestUser(pool, org.organization.id, 'enabled');

    const apiPort = await freePort();
    const env = {
      DATABASE_URL: scratch.databaseUrl,
      TEMPORAL_ADDRESS: temporal.server.address,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      PORT: String(apiPort),
      LOG_LEVEL: 'info',
      LEDGER_ENVIRONMENT: 'sandbox',
      SANDBOX_CONFIRM_SECONDS: '1',
      SANDBOX_SETTLE_SECONDS: '0',
      SETTLEMENT_CALENDAR: 'every_day',
      TEMPORAL_METRICS_ADDRESS: 'off',
      WORKER_METRICS_PORT: '0',
    };
    const worker = await startProcess('worker', 'ops/bin/worker.ts', env, /worker running/);
    cleanup.push(() => stopProcess(worker));
    const api = await startProcess('api', 'ops/bin/api.ts', { ...env, LOG_LEVEL: 'warn' }, null);
    cleanup.push(() => stopProcess(api));
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    for (
      let attempt = 0;
      !(await fetch(`${apiUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      ));
      attempt += 1
    ) {
      if (attempt > 600) throw new Error('api did not answer /healthz in 60 s');
      await sleep(100);
    }
    const pids = { temporal_server: temporal.server.process.pid!, worker: worker.pid!, api: api.pid!, postmaster };
    const take = () => snapshot(admin, pool, names, pids, hasStatements);
    const quiesce = () => sleep(QUIESCE_S * 1000);

    /** VACUUM FULL of the three databases: every table rewritten without dead rows. */
    const vacuumFull = async () => {
      for (const name of Object.values(names)) {
        const url = new URL(PG_BASE);
        url.pathname = `/${name}`;
        const db = new pg.Client({ connectionString: url.toString() });
        await db.connect();
        try {
          await db.query('VACUUM FULL');
        } finally {
          await db.end();
        }
      }
    };
    await vacuumFull();
    const compactedBase = await take();

    // --- 0: idle ------------------------------------------------------------------------------------------
    await quiesce();
    say(`phase 0: ${IDLE_S} s idle`);
    const idleBefore = await take();
    await sleep(IDLE_S * 1000);
    const idleAfter = await take();
    const idle = { before: idleBefore, after: idleAfter };

    // --- 1: to available ----------------------------------------------------------------------------------
    say(`phase 1: ${N} POST /intent (cash_in) from ${CLIENTS} clients, until every transaction is available`);
    const headers = { Authorization: `Bearer ${org.key.api_key}`, 'Content-Type': 'application/json' };
    const before1 = await take();
    let next = 0;
    let errors = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < N) {
          next += 1;
          const answer = await postJson(
            `${apiUrl}/intent`,
            { ...headers, 'X-Idempotency-Key': randomString(24) },
            { direction: 'cash_in', user_id: userId, amount: 1250, currency: 'USD' },
          );
          const body = JSON.parse(answer.text) as { status?: string };
          if (answer.status !== 200 || body.status !== 'approved') {
            errors += 1;
            say(`  POST /intent ${answer.status} ${answer.text.slice(0, 200)}`);
            if (errors > 10) throw new Error('more than 10 failed POST /intent');
          }
        }
      }),
    );
    const count = async (status: string) =>
      (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM transactions WHERE status = $1`, [status])).rows[0]!.n;
    const { rows: total } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM transactions`);
    const transactions = total[0]!.n;
    const waitFor = async (what: string, done: () => Promise<boolean>, progress: () => Promise<string>) => {
      const started = Date.now();
      let printed = started;
      while (!(await done())) {
        if (Date.now() - started > 30 * 60_000) throw new Error(`${what}: not reached in 30 minutes`);
        if (Date.now() - printed > 5_000) {
          printed = Date.now();
          say(`  [${((Date.now() - started) / 1000).toFixed(0)}s] ${await progress()}`);
        }
        await sleep(250);
      }
    };
    await waitFor(
      'all available',
      async () => (await count('available')) === transactions,
      async () => `${await count('available')}/${transactions} available`,
    );
    const availableSeconds = (performance.now() - before1.at) / 1000;
    await quiesce();
    const after1 = await take();
    const { rows: sampleRows } = await pool.query<{ id: string }>(`SELECT id FROM transactions ORDER BY random() LIMIT $1`, [SAMPLE]);
    const sample = sampleRows.map((row) => ({ workflowId: row.id }));
    const historiesAvailable = await histories(client, sample);

    // --- 2: to settled ------------------------------------------------------------------------------------
    say(`phase 2: close the window (POST /simulate/settlement), until every transaction is settled and no workflow runs`);
    const before2 = await take();
    const close = await fetch(`${apiUrl}/simulate/settlement`, {
      method: 'POST',
      headers: { ...headers, 'X-Idempotency-Key': randomString(24) },
      body: JSON.stringify({}),
    });
    if (close.status !== 200) throw new Error(`POST /simulate/settlement ${close.status} ${await close.text()}`);
    // The transfer is dated the next day and handed to the rail then: the simulated network settles it now.
    let transferId: string | undefined;
    await waitFor(
      'transfer created',
      async () => {
        transferId = (await pool.query<{ id: string }>(`SELECT id FROM transfers WHERE status = 'pending'`)).rows[0]?.id;
        return transferId !== undefined;
      },
      async () => 'waiting for the transfer',
    );
    const settle = await fetch(`${apiUrl}/simulate/transfer/${transferId}/settle`, {
      method: 'POST',
      headers: { ...headers, 'X-Idempotency-Key': randomString(24) },
    });
    if (settle.status !== 200) throw new Error(`POST /simulate/transfer/${transferId}/settle ${settle.status} ${await settle.text()}`);
    const running = async () => (await client.workflow.count(`ExecutionStatus = 'Running'`)).count;
    await waitFor(
      'all settled',
      async () => (await count('settled')) === transactions && (await running()) === 0,
      async () => `${await count('settled')}/${transactions} settled, ${await running()} workflows running`,
    );
    const settledSeconds = (performance.now() - before2.at) / 1000;
    await quiesce();
    const after2 = await take();
    // Sizes without dead rows: what the data itself takes (autovacuum may be off, as on our test Postgres, and
    // even with it on, files do not shrink), against the same measure before the run.
    await vacuumFull();
    const compacted = await take();
    // The statements Temporal's persistence ran most, over the whole run (its databases are fresh: setup and the
    // idle phase included), per transaction, with their mean execution time.
    const topStatements: Record<string, Array<{ per_transaction: number; mean_ms: number; query: string }>> = {};
    if (hasStatements)
      for (const role of ['temporal', 'ledger'] as const) {
        const { rows } = await admin.query<{ calls: number; mean_ms: number; query: string }>(
          `SELECT calls::float8 AS calls, mean_exec_time AS mean_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
             FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY calls DESC LIMIT 12`,
          [names[role]],
        );
        topStatements[role] = rows.map((row) => ({
          per_transaction: round(row.calls / transactions, 2),
          mean_ms: round(row.mean_ms, 3),
          query: row.query,
        }));
      }
    const compactedBytes = Object.fromEntries(
      Object.keys(names).map((role) => [
        role,
        round((compacted.databases[role]!.bytes - compactedBase.databases[role]!.bytes) / transactions, 0),
      ]),
    );
    const compactedLedgerTables = Object.fromEntries(
      Object.keys(compacted.ledgerTables)
        .map((name) => [name, round((compacted.ledgerTables[name]! - (compactedBase.ledgerTables[name] ?? 0)) / transactions, 0)] as const)
        .filter(([, bytes]) => bytes !== 0)
        .sort((a, b) => b[1] - a[1]),
    );
    const historiesSettled = await histories(client, sample);
    const settlementRuns: Array<{ workflowId: string; runId: string; type: string }> = [];
    for await (const execution of client.workflow.list({ query: `WorkflowType != 'transactionWorkflow'` }))
      settlementRuns.push({ workflowId: execution.workflowId, runId: execution.runId, type: execution.type });
    const settlementHistories = await histories(client, settlementRuns);

    const phase1 = perTransaction(before1, after1, idle, transactions);
    const phase2 = perTransaction(before2, after2, idle, transactions);
    const both = perTransaction(before1, after2, idle, transactions);
    const results = {
      bench: 'capacity',
      at: new Date().toISOString(),
      cores: os.cpus().length,
      postgres: settings[0]!.version.split(' on ')[0],
      temporal: 'server 1.29.1 on Postgres, SQL visibility, 4 history shards (npm run cluster)',
      processes: '1 api, 1 worker; webhook dispatcher and lifecycle drainer on; no webhook endpoints',
      transactions,
      post_errors: errors,
      one_account: 'all transactions in one account, so one window settlement for all',
      seconds_to_all_available: round(availableSeconds),
      seconds_to_all_settled_after_close: round(settledSeconds),
      idle_seconds: round((idleAfter.at - idleBefore.at) / 1000),
      per_transaction: {
        to_available: phase1,
        available_to_settled: phase2,
        whole_lifecycle: both,
        bytes_stored_after_vacuum_full: compactedBytes,
        top_statements_whole_run: topStatements,
        ledger_table_bytes_after_vacuum_full: compactedLedgerTables,
      },
      lifecycle_workflow_histories: {
        sample: sample.length,
        at_available: historiesAvailable,
        at_settled_closed: historiesSettled,
      },
      settlement_workflows: {
        runs: settlementRuns.map((run) => run.type),
        totals: settlementHistories.total,
        per_transaction: {
          events: round(settlementHistories.total.events / transactions, 3),
          bytes: round(settlementHistories.total.bytes / transactions, 1),
          actions: round(settlementHistories.total.actions / transactions, 3),
        },
      },
      connections_after_phase_1: Object.fromEntries(Object.entries(after1.databases).map(([role, d]) => [role, d.connections])),
      connections_after_phase_2: Object.fromEntries(Object.entries(after2.databases).map(([role, d]) => [role, d.connections])),
      load_average: os.loadavg().map((value) => round(value, 2)),
    };
    say('');
    say(
      `${transactions} transactions: all available ${results.seconds_to_all_available} s after the first POST; settled ${results.seconds_to_all_settled_after_close} s after the close`,
    );
    for (const [label, h] of [
      ['at available', historiesAvailable],
      ['at settled', historiesSettled],
    ] as const)
      say(
        `lifecycle history ${label} (median of ${h.count}): ${h.median.events} events, ${h.median.bytes} bytes, ~${h.median.actions} actions, ${h.median.workflow_tasks} workflow tasks`,
      );
    say(
      `settlement workflows (${settlementRuns.length} runs) per transaction: ${JSON.stringify(results.settlement_workflows.per_transaction)}`,
    );
    for (const [label, p] of [
      ['to available', phase1],
      ['available → settled', phase2],
      ['whole lifecycle', both],
    ] as const) {
      say(
        `per transaction, ${label}: WAL ${p.wal_bytes} B (${p.wal_bytes_without_idle_correction} B before the idle correction; ` +
          `${p.wal_records} records, ${p.wal_full_page_images} full-page images); ` +
          `CPU ms ${JSON.stringify(p.cpu_ms)} (before the idle correction ${JSON.stringify(p.cpu_ms_without_idle_correction)})`,
      );
      for (const [role, d] of Object.entries(p.databases)) say(`  ${role.padEnd(20)} ${JSON.stringify(d)}`);
    }
    say(`ledger table bytes per transaction (whole lifecycle): ${JSON.stringify(both.ledger_table_bytes)}`);
    say(
      `${Object.entries(topStatements)
        .map(
          ([role, list]) =>
            `${role}: most run statements per transaction (whole run): ${list.map((row) => `${row.per_transaction}× ${row.query.slice(0, 60)}`).join(' | ')}\n`,
        )
        .join('')}` +
        `bytes stored per transaction after VACUUM FULL: ${JSON.stringify(compactedBytes)}; ledger tables ${JSON.stringify(compactedLedgerTables)}`,
    );
    say(
      `open connections after phase 1: ${JSON.stringify(results.connections_after_phase_1)}; after phase 2: ${JSON.stringify(results.connections_after_phase_2)}`,
    );
    say(`results: ${writeResults('capacity', results)}`);
  } finally {
    await teardown();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
