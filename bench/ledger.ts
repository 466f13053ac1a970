/**
 * Ledger bench (issue 5). Run: `npx tsx bench/ledger.ts` (about a minute; needs Postgres at BENCH_DATABASE_URL,
 * default postgres://postgres@127.0.0.1:5432, and the Temporal CLI at .tools/bin/temporal).
 *
 * 1. POST /intent (approved, workflow started before the answer) at 32 concurrent clients for ~10 s:
 *    throughput and p50/p99 — beside a bare loop starting a no-op workflow at the same concurrency on the
 *    same Temporal server, in the same run.
 * 2. GET /transaction/{id} at 64 connections (autocannon) for ~10 s beside a bare node:http server answering a
 *    constant JSON body, plus the api's and the worker's RSS under that load.
 * The api and the worker run as their own processes (as deployed); numbers go to stdout and bench/results/.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../src/config';
import { createPool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { getTransaction } from '../src/ledger/transactions';
import { hashApiKey } from '../src/orgs/keys';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { freePort } from '../test/support/ports';
import { createTestUser } from '../test/support/harness';
import { createScratchDatabase, startScratchTemporal } from '../test/support/scratch';

const PHASE_SECONDS = Number(process.env.BENCH_PHASE_SECONDS ?? 10);
const INTENT_CLIENTS = 32;
const GET_CONNECTIONS = 64;
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const say = (line: string) => process.stdout.write(`${line}\n`);

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function rssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return Math.round(kb / 1024);
  } catch {
    return NaN;
  }
}

/** Runs `op` from `clients` concurrent loops for `seconds`; prints progress each second. */
async function closedLoop(label: string, clients: number, seconds: number, op: () => Promise<void>) {
  const latenciesMs: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const progress = setInterval(() => {
    const elapsed = (performance.now() - started) / 1000;
    say(`  [${label}] ${elapsed.toFixed(0)}s  ${latenciesMs.length} done  ${(latenciesMs.length / elapsed).toFixed(0)}/s  errors ${errors}`);
  }, 1000);
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        await op();
        latenciesMs.push(performance.now() - t0);
      } catch (error) {
        errors += 1;
        if (errors <= 3) say(`  [${label}] error: ${(error as Error).message}`);
      }
    }
  }));
  clearInterval(progress);
  const elapsedS = (performance.now() - started) / 1000;
  latenciesMs.sort((a, b) => a - b);
  return {
    count: latenciesMs.length, errors, seconds: Number(elapsedS.toFixed(2)),
    per_second: Number((latenciesMs.length / elapsedS).toFixed(1)),
    p50_ms: Number(percentile(latenciesMs, 50).toFixed(1)), p99_ms: Number(percentile(latenciesMs, 99).toFixed(1)),
  };
}

function startProcess(name: string, script: string, env: Record<string, string>, readyLine: RegExp): Promise<ChildProcess> {
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the api and worker processes.
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...extra, '--import', 'tsx', script], {
    cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`${name} not ready in 120 s:\n${buffer.slice(-2000)}`)), 120_000);
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      if (readyLine.test(buffer)) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stdout.resume();
        child.stderr.resume();
        resolve(child);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}:\n${buffer.slice(-2000)}`)));
  });
}

function runAutocannon(label: string, url: string, headers: Record<string, string>) {
  return new Promise<autocannon.Result>((resolve, reject) => {
    let responses = 0;
    const started = Date.now();
    const instance = autocannon({ url, connections: GET_CONNECTIONS, duration: PHASE_SECONDS, headers }, (error, result) => {
      clearInterval(progress);
      if (error) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve(result);
    });
    instance.on('response', () => {
      responses += 1;
    });
    const progress = setInterval(() => {
      const elapsed = (Date.now() - started) / 1000;
      say(`  [${label}] ${elapsed.toFixed(0)}s  ${responses} responses  ${(responses / elapsed).toFixed(0)}/s`);
    }, 1000);
  });
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const cleanup: Array<() => unknown> = [];
  try {
    say(`ledger bench: ${os.cpus().length} cores, ${PHASE_SECONDS} s per phase`);
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-bench-'));
    const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'));
    cleanup.push(() => temporal.stop());
    const { dev, client } = temporal;
    const database = `ledger_bench_${Date.now()}`;
    const scratch = await createScratchDatabase(PG_BASE, database);
    cleanup.push(() => scratch.drop());
    const { databaseUrl } = scratch;
    say(`Temporal dev server ${dev.address}, Postgres ${database}`);

    const pool = createPool(databaseUrl, 4);
    cleanup.push(() => pool.end());
    const org = await createOrganization(pool, { name: 'Bench operator', kycRequired: true, environment: 'sandbox' });
    await setRateLimits(pool, org.organization.id, { write: 1_000_000, read: 1_000_000 });
    const userId = await createTestUser(pool, org.organization.id, 'enabled');

    const apiPort = await freePort();
    const env = {
      DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: dev.address, TEMPORAL_TASK_QUEUE: 'ledger-bench', PORT: String(apiPort), LOG_LEVEL: 'info',
      LEDGER_ENVIRONMENT: 'sandbox',
    };
    say('starting worker and api processes...');
    const worker = await startProcess('worker', 'src/bin/worker.ts', env, /worker running/);
    cleanup.push(() => worker.kill('SIGTERM'));
    const api = await startProcess('api', 'src/bin/api.ts', env, /api listening/);
    cleanup.push(() => api.kill('SIGTERM'));
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    for (let i = 0; ; i += 1) {
      try {
        if ((await fetch(`${apiUrl}/healthz`)).ok) break;
      } catch {
        if (i > 200) throw new Error('api did not answer /healthz');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }

    // --- phase 1a: bare loop starting a no-op workflow ---------------------------------------------------
    const noopConnection = await NativeConnection.connect({ address: dev.address });
    const noopWorker = await Worker.create({
      connection: noopConnection, namespace: 'default', taskQueue: 'bench-noop',
      workflowsPath: path.join(__dirname, 'noopWorkflow.ts'),
    });
    const noopRunning = noopWorker.run();
    cleanup.push(async () => {
      noopWorker.shutdown();
      await noopRunning;
      await noopConnection.close();
    });
    say(`phase 1a: bare loop starting a no-op workflow, ${INTENT_CLIENTS} concurrent, ${PHASE_SECONDS} s`);
    const bare = await closedLoop('no-op start', INTENT_CLIENTS, PHASE_SECONDS, async () => {
      await client.workflow.start('noopWorkflow', { taskQueue: 'bench-noop', workflowId: `noop-${randomString(16)}` });
    });

    // --- phase 1b: POST /intent --------------------------------------------------------------------------
    say(`phase 1b: POST /intent (cash_in, approved, workflow started), ${INTENT_CLIENTS} clients, ${PHASE_SECONDS} s`);
    const transactionIds: string[] = [];
    let rssDuringIntents = { api: 0, worker: 0 };
    const rssSampler1 = setInterval(() => {
      rssDuringIntents = { api: Math.max(rssDuringIntents.api, rssMb(api.pid!)), worker: Math.max(rssDuringIntents.worker, rssMb(worker.pid!)) };
    }, 500);
    const headers = { Authorization: `Bearer ${org.key.api_key}`, 'Content-Type': 'application/json' };
    const intents = await closedLoop('POST /intent', INTENT_CLIENTS, PHASE_SECONDS, async () => {
      const response = await fetch(`${apiUrl}/intent`, {
        method: 'POST',
        headers: { ...headers, 'X-Idempotency-Key': randomString(24) },
        body: JSON.stringify({ direction: 'cash_in', user_id: userId, amount: 1250, currency: 'USD' }),
      });
      const body = (await response.json()) as { status?: string; transactions?: Array<{ id: string }> };
      if (response.status !== 200 || body.status !== 'approved') throw new Error(`POST /intent ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
      if (transactionIds.length < 1000) transactionIds.push(body.transactions![0]!.id);
    });
    clearInterval(rssSampler1);
    const { rows: unstarted } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM transactions WHERE workflow_started_at IS NULL`);

    // --- phase 2a: bare node:http ------------------------------------------------------------------------
    const barePort = await freePort();
    const bareServer = spawn(process.execPath, ['-e', `
      const body = JSON.stringify({ id: 'txn_constant0000000000000000', amount: 1250, direction: 'cash_in', currency: 'USD', status: 'pending' });
      require('node:http').createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(body); })
        .listen(${barePort}, '127.0.0.1', () => process.stdout.write('listening\\n'));`], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanup.push(() => bareServer.kill('SIGTERM'));
    await new Promise((resolve) => bareServer.stdout.once('data', resolve));
    say(`phase 2a: bare node:http constant JSON, ${GET_CONNECTIONS} connections, ${PHASE_SECONDS} s`);
    const bareGet = await runAutocannon('bare http', `http://127.0.0.1:${barePort}/`, {});

    // --- phase 2b: GET /transaction/{id} -----------------------------------------------------------------
    const txnId = transactionIds[0]!;
    say(`phase 2b: GET /transaction/${txnId}, ${GET_CONNECTIONS} connections, ${PHASE_SECONDS} s`);
    let rssDuringGets = { api: 0, worker: 0 };
    const rssSampler2 = setInterval(() => {
      rssDuringGets = { api: Math.max(rssDuringGets.api, rssMb(api.pid!)), worker: Math.max(rssDuringGets.worker, rssMb(worker.pid!)) };
    }, 500);
    const apiGet = await runAutocannon('GET /transaction', `${apiUrl}/transaction/${txnId}`, { Authorization: headers.Authorization });
    clearInterval(rssSampler2);

    // --- diagnostic: the ledger's own read (the repo query) without the HTTP edge in front of it ----------
    say(`diagnostic: repo.getTransaction alone, ${GET_CONNECTIONS} concurrent over a pool of 20, ${PHASE_SECONDS} s`);
    const repoPool = createPool(databaseUrl, 20);
    const repoOnly = await closedLoop('repo read', GET_CONNECTIONS, PHASE_SECONDS, async () => {
      if (!(await getTransaction(repoPool, org.organization.id, txnId))) throw new Error('missing');
    });
    // The edge's admission alone (one round trip: failed-auth limit, key, allowlist, shared sliding-window
    // limit): every authenticated request of one organization passes through it, serialized on its counter row.
    say(`diagnostic: the edge's admission (edge_admit: key, allowlist, rate limit) alone (one organization, reads), ${GET_CONNECTIONS} concurrent, ${PHASE_SECONDS} s`);
    const limiterOnly = await closedLoop('rate limiter', GET_CONNECTIONS, PHASE_SECONDS, async () => {
      await repoPool.query(`SELECT outcome FROM edge_admit($1, '127.0.0.1', '127.0.0.1', now(), '60 seconds', 'sandbox', false, 20)`,
        [hashApiKey(org.key.api_key)]);
    });
    await repoPool.end();

    const results = {
      at: new Date().toISOString(), cores: os.cpus().length, phase_seconds: PHASE_SECONDS,
      post_intent: { ...intents, clients: INTENT_CLIENTS },
      bare_noop_workflow_start: { ...bare, clients: INTENT_CLIENTS },
      post_intent_vs_bare_start_ratio: Number((intents.per_second / bare.per_second).toFixed(3)),
      transactions_without_workflow_after_phase: unstarted[0]!.n,
      get_transaction: { rps: apiGet.requests.average, p50_ms: apiGet.latency.p50, p99_ms: apiGet.latency.p99, non2xx: apiGet.non2xx, errors: apiGet.errors },
      bare_http: { rps: bareGet.requests.average, p50_ms: bareGet.latency.p50, p99_ms: bareGet.latency.p99 },
      repo_get_transaction_only: repoOnly,
      edge_rate_limiter_only: limiterOnly,
      get_vs_bare_http_ratio: Number((apiGet.requests.average / bareGet.requests.average).toFixed(3)),
      rss_mb_peak: { during_post_intent: rssDuringIntents, during_get_transaction: rssDuringGets },
    };
    say('');
    say(`POST /intent            ${intents.per_second}/s  p50 ${intents.p50_ms} ms  p99 ${intents.p99_ms} ms  (${intents.count} ok, ${intents.errors} errors)`);
    say(`bare no-op wf start     ${bare.per_second}/s  p50 ${bare.p50_ms} ms  p99 ${bare.p99_ms} ms`);
    say(`ratio intent/bare       ${results.post_intent_vs_bare_start_ratio}`);
    say(`GET /transaction/{id}   ${apiGet.requests.average} req/s  p50 ${apiGet.latency.p50} ms  p99 ${apiGet.latency.p99} ms  non2xx ${apiGet.non2xx}`);
    say(`bare node:http          ${bareGet.requests.average} req/s  p50 ${bareGet.latency.p50} ms  p99 ${bareGet.latency.p99} ms`);
    say(`ratio get/bare          ${results.get_vs_bare_http_ratio}`);
    say(`repo read alone         ${repoOnly.per_second}/s  p50 ${repoOnly.p50_ms} ms  (the ledger query without the edge's auth + rate-limit round trips)`);
    say(`edge limiter alone      ${limiterOnly.per_second}/s  p50 ${limiterOnly.p50_ms} ms  (edge_admit for one organization's key)`);
    say(`RSS peak MB             intents: api ${rssDuringIntents.api} worker ${rssDuringIntents.worker}; gets: api ${rssDuringGets.api} worker ${rssDuringGets.worker}`);
    const outDir = path.join(REPO_ROOT, 'bench', 'results');
    fs.mkdirSync(outDir, { recursive: true });
    const file = path.join(outDir, `ledger-${Date.now()}.json`);
    fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    say(`results: ${file}`);
  } finally {
    for (const step of cleanup.reverse()) {
      try {
        await step();
      } catch (error) {
        say(`cleanup: ${(error as Error).message}`);
      }
    }
  }
}

main().then(() => process.exit(0), (error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
