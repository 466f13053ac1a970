import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPool, type Pool } from '../src/db/pool';
import { createAccount } from '../src/orgs/repo';
import { settlementViolations } from '../src/settlement/invariants';
import { forEachBounded } from '../src/concurrency';
import { stopLeftover } from '../ops/childProcess';
import { WARM_SPARES_PER_ROLE } from '../ops/warmSpare';
import { connectTemporal } from '../src/platform/temporal';
import { apiClient, createTestOrg, createTestUser, eventually } from './support/harness';
import { idempotencyKey } from './support/payments';
import { freePort, freePortBlock } from './support/ports';
import { portOpen, runAdmin, spawnProject, stopGracefully, type Spawned } from './support/processes';

/**
 * `npm run cluster` as operators run it (issue "Production topology"): the Temporal server on Postgres, its Web
 * UI, two api processes sharing PORT and two worker processes, all started, supervised and stopped by one
 * command; and the settlement of a few thousand transactions surviving SIGKILLs of a worker process and of the
 * Temporal server.
 */

type Env = Record<string, string | undefined>;

/**
 * `npm run cluster` on its embedded defaults in `dataDir`: its own Postgres (max_connections 200), so a cluster
 * under test takes none of the machine's shared Postgres connections from the other suites; free ports.
 */
async function clusterEnv(
  extra: Env,
): Promise<{ env: Env; url: string; temporalPort: number; uiPort: number; port: number; ledgerUrl: string }> {
  const port = await freePort();
  const temporalPort = await freePortBlock(9);
  const uiPort = await freePort();
  const pgPort = await freePort();
  const env: Env = {
    LOG_LEVEL: 'warn',
    DATABASE_URL: undefined,
    TEMPORAL_ADDRESS: undefined,
    PORT: String(port),
    TEMPORAL_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(uiPort),
    EMBEDDED_PG_PORT: String(pgPort),
    TEMPORAL_METRICS_ADDRESS: 'off',
    WORKER_METRICS_PORT: '0',
    ...extra,
  };
  return {
    env,
    url: `http://127.0.0.1:${port}`,
    temporalPort,
    uiPort,
    port,
    ledgerUrl: `postgres://postgres:postgres@127.0.0.1:${pgPort}/ledger`,
  };
}

/** A data directory the `postgres` user can pass through (root runs the embedded Postgres as that user). */
function openDataDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}

/** Pids of the primary's children running `entry` (ops/bin/worker.ts, ops/bin/api.ts). */
function childPids(primary: number, entry: string): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === primary && fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(entry)) pids.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** Stops what a run that failed half-way left behind: the detached Temporal server, UI and Postgres, by their pid files. */
async function stopLeftovers(dataDir: string) {
  for (const file of [path.join('temporal-server', 'server.pid'), path.join('temporal-server', 'ui', 'ui.pid')])
    await stopLeftover({ pidFile: path.join(dataDir, file), marker: '' });
  // SIGQUIT: Postgres's immediate shutdown.
  await stopLeftover({ pidFile: path.join(dataDir, 'postgres', 'postmaster.pid'), marker: '', signal: 'SIGQUIT', keepPidFile: true });
}

function pidIn(file: string): number {
  return Number(fs.readFileSync(file, 'utf8').trim());
}

function withOutput(started: Spawned) {
  return (error: Error) => {
    throw new Error(`${error.message}\nnpm run cluster printed:\n${started.output().slice(-6_000)}`);
  };
}

describe('npm run cluster', () => {
  test('starts the Temporal server on Postgres, its UI, 2 api and 2 worker processes; admin needs no settings; SIGTERM stops all; a second start keeps the data', async () => {
    const dataDir = openDataDir('ledger-cluster-');
    const { env, url, temporalPort, uiPort, port, ledgerUrl } = await clusterEnv({ DATA_DIR: dataDir });
    let started = spawnProject(process.execPath, ['ops/bin/start.js', 'cluster'], env);
    try {
      await started.waitFor(/Ctrl-C stops everything/, 240_000);
      const printed = started.output();
      expect(printed).toContain(`API            ${url}`);
      expect(printed).toContain(`Temporal UI    http://127.0.0.1:${uiPort}`);
      expect(printed).toContain(`2 api (sharing port ${port}), 2 worker, Temporal server 127.0.0.1:${temporalPort} (4 history shards)`);
      const apiKey = /Demo sandbox API key \(shown once\): (sk_sandbox_\w+)/.exec(printed)![1]!;
      expect(childPids(started.child.pid!, 'ops/bin/worker.ts')).toHaveLength(2);
      expect(childPids(started.child.pid!, 'ops/bin/api.ts')).toHaveLength(2);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${uiPort}/api/v1/namespaces/default`)).status).toBe(200);
      // The console links workflows to that UI (the api processes were given its address).
      const consoleConfig = (await (await fetch(`${url}/console/config.json`)).json()) as { temporal_ui_url: string | null };
      expect(consoleConfig.temporal_ui_url).toBe(`http://127.0.0.1:${uiPort}`);
      // The server keeps its state in the two databases on the ledger's Postgres, with 4 shards.
      const temporalDb = createPool(new URL('/temporal', ledgerUrl).toString(), 2);
      const shards = await temporalDb.query('SELECT count(*)::int AS n FROM shards').finally(() => temporalDb.end());
      expect(shards.rows[0].n).toBe(4);
      // The operator CLI reaches the same Postgres and Temporal with the same settings and nothing else.
      const demoOrg = /Demo organization (org_\w+)/.exec(printed)![1]!;
      const keys = await runAdmin(['key', 'list', '--org', demoOrg, '--json'], env as Record<string, string>);
      expect(keys.code).toBe(0);
      expect(keys.json.keys.map((key: { last4: string }) => key.last4)).toEqual([apiKey.slice(-4)]);
      const run = await runAdmin(['settlement', 'run', '--date', '2026-01-02', '--org', demoOrg, '--json'], env as Record<string, string>);
      expect(run.code).toBe(0);
      const call = apiClient(url, apiKey);
      expect((await call('POST', '/keys/verify')).status).toBe(200);

      // Warm spares (ops/warmSpare.ts): once the cluster serves, WARM_SPARES_PER_ROLE processes per role stand by,
      // and a SIGKILLed worker or api process is replaced by one of its role's spares; the role has its spares
      // again once the replacement is ready (not before, so a new spare also says the replacement polls or listens).
      const primary = started.child.pid!;
      const sparesOf = (role: string, not?: number) =>
        eventually(
          async () => {
            const pids = childPids(primary, `ledger warm spare: ${role}`);
            return pids.length === WARM_SPARES_PER_ROLE && (not === undefined || !pids.includes(not)) ? pids : undefined;
          },
          180_000,
          `${WARM_SPARES_PER_ROLE} ${role} warm spares`,
        );
      const spares: number[] = [];
      for (const [role, entry] of [
        ['worker', 'ops/bin/worker.ts'],
        ['api', 'ops/bin/api.ts'],
      ] as const) {
        const before = await sparesOf(role);
        const [victim] = childPids(primary, entry);
        process.kill(victim!, 'SIGKILL');
        const serving = await eventually(
          async () => {
            const now = childPids(primary, entry);
            return now.length === 2 && !now.includes(victim!) ? now : undefined;
          },
          180_000,
          `the ${role} process replaced`,
        );
        const taken = before.filter((pid) => serving.includes(pid));
        expect(taken).toHaveLength(1);
        spares.push(...(await sparesOf(role, taken[0])));
      }
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      expect((await call('POST', '/keys/verify')).status).toBe(200);

      expect((await stopGracefully(started, 90_000)).code).toBe(0);
      // The spares stop with the cluster.
      for (const spare of spares) expect(fs.existsSync(`/proc/${spare}`)).toBe(false);
      for (const listening of [port, temporalPort, uiPort]) expect(await portOpen(listening)).toBe(false);
      expect(fs.existsSync(path.join(dataDir, 'temporal-server', 'server.pid'))).toBe(false);

      started = spawnProject(process.execPath, ['ops/bin/start.js', 'cluster'], env);
      await started.waitFor(/Ctrl-C stops everything/, 240_000);
      expect(started.output()).not.toContain('Demo sandbox API key');
      expect((await call('POST', '/keys/verify')).status).toBe(200);
      expect((await stopGracefully(started, 90_000)).code).toBe(0);
    } catch (error) {
      withOutput(started)(error as Error);
    } finally {
      await stopGracefully(started, 90_000);
      await stopLeftovers(dataDir);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 600_000);

  test('settling 2,000 transactions while a worker process and the Temporal server are SIGKILLed (twice) loses and doubles nothing', async () => {
    const TRANSACTIONS = Number(process.env.CLUSTER_CHAOS_TRANSACTIONS ?? 2_000);
    const dataDir = openDataDir('ledger-chaos-');
    const { env, url, temporalPort, ledgerUrl } = await clusterEnv({
      DATA_DIR: dataDir,
      SANDBOX_CONFIRM_SECONDS: '0',
      SANDBOX_SETTLE_SECONDS: '3600',
    });
    const started = spawnProject(process.execPath, ['ops/bin/start.js', 'cluster'], env);
    let pool: Pool | null = null;
    const fail = withOutput(started);
    const testStarted = Date.now();
    /** Each step's end, with the seconds since the test started (where a slow run spends them). */
    const step = (what: string) => process.stderr.write(`[cluster chaos] +${((Date.now() - testStarted) / 1000).toFixed(1)} s: ${what}\n`);
    try {
      await started.waitFor(/Ctrl-C stops everything/, 240_000);
      step('the cluster serves');
      pool = createPool(ledgerUrl, 4);
      const org = await createTestOrg(pool, { write: 1_000_000, read: 1_000_000 });
      const second = await createAccount(pool, org.organizationId, 'Chaos second');
      const accountIds = [org.accountId, second.id];
      const userId = await createTestUser(pool, org.organizationId);
      const call = apiClient(url, org.apiKey);
      const ids: string[] = [];
      await forEachBounded(
        Array.from({ length: TRANSACTIONS }, (_, i) => i),
        16,
        async (i) => {
          const body = { direction: i % 3 === 2 ? 'cash_out' : 'cash_in', user_id: userId, amount: 100 + i, currency: 'USD' };
          const response = await call('POST', '/intent', { ...body, account_id: accountIds[i % 2] }, idempotencyKey());
          if (response.status !== 200) throw new Error(`POST /intent answered ${response.status}: ${response.text}`);
          ids.push(response.body.transactions[0].id as string);
        },
      );
      expect(new Set(ids).size).toBe(TRANSACTIONS);
      step(`${TRANSACTIONS} intents accepted`);
      const countWhere = async (condition: string) =>
        (await pool!.query(`SELECT count(*)::int AS n FROM transactions WHERE id = ANY($1) AND ${condition}`, [ids])).rows[0].n as number;
      await eventually(
        async () => ((await countWhere(`direction = 'cash_in' AND status = 'pending'`)) === 0 ? true : undefined),
        300_000,
        'every cash_in available',
      );
      step('every cash_in available');
      const dates = (
        await pool.query(`SELECT DISTINCT date::text AS date FROM transactions WHERE id = ANY($1) ORDER BY 1`, [ids])
      ).rows.map((row) => row.date as string);

      const workers = () => childPids(started.child.pid!, 'ops/bin/worker.ts');
      const serverPidFile = path.join(dataDir, 'temporal-server', 'server.pid');
      /** SIGKILL to one worker process and to the Temporal server; the cluster's supervisors restart both. */
      const chaos = async (round: number) => {
        const [worker] = workers();
        const server = pidIn(serverPidFile);
        process.kill(worker!, 'SIGKILL');
        process.kill(server, 'SIGKILL');
        step(`round ${round}: SIGKILL worker ${worker} and Temporal server ${server}`);
        await started.waitFor(new RegExp(`(Temporal server was killed by SIGKILL[^]*){${round}}`), 30_000);
        await eventually(
          async () => (fs.existsSync(serverPidFile) && pidIn(serverPidFile) !== server ? true : undefined),
          120_000,
          'Temporal server restarted',
        );
        await eventually(
          async () => (workers().length === 2 && !workers().includes(worker!) ? true : undefined),
          180_000,
          'worker restarted',
        );
        step(`round ${round}: the Temporal server and the worker restarted`);
      };

      for (const date of dates) {
        const closed = await call('POST', '/simulate/settlement', { date }, idempotencyKey());
        expect(closed.status).toBe(200);
      }
      // Round 1 while the windows build their transfers and tell members they are assigned.
      await eventually(
        async () => ((await pool!.query(`SELECT 1 FROM transfers WHERE account_id = ANY($1)`, [accountIds])).rowCount ? true : undefined),
        120_000,
        'a transfer built',
      );
      await chaos(1);
      const transfers = () => pool!.query(`SELECT id, status FROM transfers WHERE account_id = ANY($1) ORDER BY id`, [accountIds]);
      await eventually(
        async () => ((await transfers()).rowCount === accountIds.length * dates.length ? true : undefined),
        180_000,
        'every transfer built',
      );
      step('every transfer built');
      // The network settles every transfer now (the sandbox would wait for the transfer's date).
      for (const { id } of (await transfers()).rows) {
        await eventually(
          async () => {
            const answer = await call('POST', `/simulate/transfer/${id}/settle`, undefined, idempotencyKey());
            return answer.status === 200 ? true : undefined;
          },
          180_000,
          `transfer ${id} settle accepted`,
        );
      }
      // Round 2 while members are being settled and told.
      await eventually(async () => ((await countWhere(`status = 'settled'`)) > 0 ? true : undefined), 180_000, 'a member settled');
      await chaos(2);

      await eventually(
        async () => ((await countWhere(`status = 'settled'`)) === TRANSACTIONS ? true : undefined),
        300_000,
        'every member settled',
      );
      step('every member settled');
      expect(await settlementViolations(pool, { accountIds, windowDate: dates.at(-1)! })).toEqual([]);
      expect((await transfers()).rows.every((row) => row.status === 'settled')).toBe(true);
      // Every balance re-derived from the transactions agrees with the stored one.
      const verified = await runAdmin(['account', 'verify', '--org', org.organizationId], env as Record<string, string>);
      expect(verified.code).toBe(0);
      step('transfers and balances verified');
      const members = await pool.query(`SELECT sum(transaction_count)::int AS n FROM transfers WHERE account_id = ANY($1)`, [accountIds]);
      expect(members.rows[0].n).toBe(TRANSACTIONS);
      // One history row per transition: nothing applied twice.
      const doubled = await pool.query(
        `SELECT transaction_id, to_status, count(*) FROM transaction_status_history WHERE transaction_id = ANY($1) GROUP BY 1, 2 HAVING count(*) > 1`,
        [ids],
      );
      expect(doubled.rows).toEqual([]);
      // Every lifecycle workflow closed, completed at `settled`.
      const { connection, client } = await connectTemporal(`127.0.0.1:${temporalPort}`, 'default');
      try {
        const open: string[] = [];
        await forEachBounded(ids, 16, async (id) => {
          await eventually(
            async () => ((await client.workflow.getHandle(id).describe()).status.name === 'COMPLETED' ? true : undefined),
            180_000,
            `lifecycle ${id} closed`,
          ).catch(() => open.push(id));
        });
        expect(open).toEqual([]);
        step('every lifecycle workflow closed');
      } finally {
        await connection.close();
      }
      expect((await stopGracefully(started, 90_000)).code).toBe(0);
    } catch (error) {
      fail(error as Error);
    } finally {
      await stopGracefully(started, 90_000);
      await stopLeftovers(dataDir);
      await pool?.end();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 1_200_000);
});
