import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startApi } from '../src/api';
import { ConfigError, loadConfig } from '../src/config';
import { migrate } from '../src/db/migrate';
import { createPool } from '../src/db/pool';
import { createLogger } from '../src/logger';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { SEARCH_ATTRIBUTES_REFRESH_ON_READ, startTemporalDevServer } from '../ops/devServer';
import { connectTemporal, SEARCH_ATTRIBUTES } from '../src/platform/temporal';
import { apiClient, createTestOrg, startStack, testConfig, testInfra, type Stack } from './support/harness';
import { expectDocumented } from './support/openapi';
import { freePort } from './support/ports';
import { portOpen, runAdmin, spawnProject, stopGracefully, TSX } from './support/processes';

describe('SPEC §1 configuration', () => {
  test('defaults match the spec', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      TEMPORAL_NAMESPACE: 'default',
      LEDGER_ENVIRONMENT: 'sandbox',
      TRUST_PROXY: false,
      SETTLEMENT_CUTOFF: '00:00',
      LOG_LEVEL: 'info',
      SANDBOX_CONFIRM_SECONDS: 30,
      SANDBOX_SETTLE_SECONDS: 60,
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.TEMPORAL_ADDRESS).toBeUndefined();
  });

  test.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['LEDGER_ENVIRONMENT', 'staging'],
    ['TRUST_PROXY', 'not-an-address'],
    ['SETTLEMENT_CUTOFF', '25:00'],
    ['TEMPORAL_ADDRESS', 'no-port'],
    ['DATABASE_URL', 'not a url'],
    ['LOG_LEVEL', 'loud'],
  ])('a bad %s (%s) is refused with a message naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}=`));
  });

  test('TRUST_PROXY accepts a list of proxies', () => {
    expect(loadConfig({ TRUST_PROXY: '10.0.0.1, 192.168.0.0/16, loopback' }).TRUST_PROXY).toEqual([
      '10.0.0.1',
      '192.168.0.0/16',
      'loopback',
    ]);
  });

  test('a process given a bad value stops with exit code 2 and names the variable', async () => {
    const api = spawnProject(TSX, ['ops/bin/api.ts'], { PORT: 'abc' });
    const { code } = await api.exited;
    expect(code).toBe(2);
    expect(api.output()).toMatch(/PORT="abc"/);
  });
});

describe('migrations', () => {
  /** Runs `use` with the URL of a new empty database, dropped after. */
  async function withEmptyDatabase(name: string, use: (url: string) => Promise<void>): Promise<void> {
    const admin = new pg.Client({ connectionString: process.env.LEDGER_TEST_ADMIN_URL });
    await admin.connect();
    const database = `ledger_test_${Date.now()}_${name}`;
    await admin.query(`CREATE DATABASE ${database}`);
    try {
      const url = new URL(process.env.LEDGER_TEST_ADMIN_URL!);
      url.pathname = `/${database}`;
      await use(url.toString());
    } finally {
      await admin.query(`DROP DATABASE ${database} WITH (FORCE)`);
      await admin.end();
    }
  }

  test('apply to an empty database, and applying again is a no-op', async () => {
    await withEmptyDatabase('migrations', async (url) => {
      const first = await migrate(url);
      expect(first.length).toBeGreaterThanOrEqual(4);
      expect(first[0]).toBe('0001_platform');
      expect(await migrate(url)).toEqual([]);
    });
  });

  test('processes starting at once all migrate: they wait on one lock, each applies what is left, none fails', async () => {
    // npm run cluster starts its api and worker processes and their warm spares at once, each migrating at its
    // start; node-pg-migrate's own lock is a try-lock that fails the second ("Another migration is already
    // running"), which made a warm spare exit on 2026-11-27.
    await withEmptyDatabase('concurrent_migrations', async (url) => {
      const starts = await Promise.allSettled(Array.from({ length: 6 }, () => migrate(url)));
      expect(starts.filter((start) => start.status === 'rejected')).toEqual([]);
      const applied = starts.flatMap((start) => (start.status === 'fulfilled' ? start.value : []));
      // Every migration applied exactly once, by whichever process held the lock.
      expect(applied.length).toBe(new Set(applied).size);
      expect(applied).toContain('0001_platform');
      expect(await migrate(url)).toEqual([]);
    });
  });

  test('the shared test database is fully migrated', async () => {
    expect(await migrate(testInfra().databaseUrl)).toEqual([]);
  });
});

describe('SPEC §1 npm start on embedded defaults', () => {
  test('first start prints the addresses and a demo key; SIGTERM stops everything; a second start keeps the data', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-start-'));
    const ports = {
      PORT: await freePort(),
      TEMPORAL_PORT: await freePort(),
      TEMPORAL_UI_PORT: await freePort(),
      EMBEDDED_PG_PORT: await freePort(),
    };
    const env: Record<string, string | undefined> = {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      TEMPORAL_CLI_PATH: testInfra().cliPath,
      DATABASE_URL: undefined,
      TEMPORAL_ADDRESS: undefined,
      TEMPORAL_METRICS_ADDRESS: 'off',
      ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
    };
    const start = () => spawnProject(process.execPath, ['ops/bin/start.js'], env);

    const first = start();
    try {
      await first.waitFor(/Ctrl-C stops everything/);
      const output = first.output();
      expect(output).toContain(`API            http://127.0.0.1:${ports.PORT}`);
      expect(output).toContain(`API reference  http://127.0.0.1:${ports.PORT}/docs`);
      expect(output).toContain(`Temporal UI    http://127.0.0.1:${ports.TEMPORAL_UI_PORT}`);
      const demoKey = /Demo sandbox API key \(shown once\): (sk_sandbox_\w+)/.exec(output)?.[1];
      expect(demoKey).toBeDefined();
      const url = `http://127.0.0.1:${ports.PORT}`;
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${ports.TEMPORAL_UI_PORT}/`)).status).toBe(200);
      expect((await apiClient(url, demoKey!)('POST', '/keys/verify')).status).toBe(200);

      expect((await stopGracefully(first)).code).toBe(0);
      for (const port of Object.values(ports)) expect(await portOpen(port)).toBe(false);

      const second = start();
      try {
        await second.waitFor(/Ctrl-C stops everything/);
        expect(second.output()).not.toContain('Demo sandbox API key');
        expect((await apiClient(url, demoKey!)('POST', '/keys/verify')).body).toMatchObject({ organization_name: 'Demo operator' });
        expect((await stopGracefully(second)).code).toBe(0);
      } finally {
        await stopGracefully(second);
      }
    } finally {
      await stopGracefully(first);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe('SPEC §13 operator CLI', () => {
  let stack: Stack;
  const env = () => ({ DATABASE_URL: testInfra().databaseUrl });
  beforeAll(async () => {
    stack = await startStack({ worker: false });
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('org create --json prints the three ids, and the key authenticates', async () => {
    const { code, json } = await runAdmin(['org', 'create', '--name', 'CLI operator', '--json'], env());
    expect(code).toBe(0);
    expect(json.organization_id).toMatch(/^org_\w{16,}$/);
    expect(json.account_id).toMatch(/^account_\w{16,}$/);
    expect(json.api_key).toMatch(/^sk_sandbox_\w{32}$/);
    const verified = await apiClient(stack.url, json.api_key)('POST', '/keys/verify');
    expect(verified.body).toEqual({ organization_name: 'CLI operator', organization_id: json.organization_id, environment: 'sandbox' });
    const stored = await stack.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE key_hash = sha256($1::bytea)`, [
      Buffer.from(json.api_key),
    ]);
    expect(stored.rows[0].n).toBe(1);
    const plain = await stack.pool.query(`SELECT count(*)::int AS n FROM api_keys WHERE encode(key_hash, 'escape') LIKE '%' || $1 || '%'`, [
      json.api_key,
    ]);
    expect(plain.rows[0].n).toBe(0);
  });

  test('org create --kyc-required false is stored', async () => {
    const { json } = await runAdmin(['org', 'create', '--name', 'No KYC', '--kyc-required', 'false', '--json'], env());
    const { rows } = await stack.pool.query(`SELECT kyc_required FROM organizations WHERE id = $1`, [json.organization_id]);
    expect(rows[0].kyc_required).toBe(false);
  });

  test('key create, list and revoke; a revoked key gets 401', async () => {
    const org = await createTestOrg(stack.pool);
    const created = await runAdmin(['key', 'create', '--org', org.organizationId, '--json'], env());
    expect(created.json.api_key).toMatch(/^sk_sandbox_/);
    const listed = await runAdmin(['key', 'list', '--org', org.organizationId, '--json'], env());
    expect(listed.json.keys.map((k: { id: string }) => k.id)).toEqual(expect.arrayContaining([org.keyId, created.json.key_id]));
    expect(JSON.stringify(listed.json)).not.toContain(created.json.api_key);
    const revoked = await runAdmin(['key', 'revoke', created.json.key_id, '--json'], env());
    expect(revoked.code).toBe(0);
    expect((await apiClient(stack.url, created.json.api_key)('POST', '/keys/verify')).status).toBe(401);
    expect((await apiClient(stack.url, org.apiKey)('POST', '/keys/verify')).status).toBe(200);
  });

  test('allowlist add, list and remove', async () => {
    const org = await createTestOrg(stack.pool);
    const added = await runAdmin(['allowlist', 'add', '--org', org.organizationId, '--ip', '10.1.2.3/8', '--json'], env());
    expect(added.json.allowlist).toEqual(['10.0.0.0/8']);
    await runAdmin(['allowlist', 'add', '--org', org.organizationId, '--ip', '::ffff:192.0.2.7', '--json'], env());
    const listed = await runAdmin(['allowlist', 'list', '--org', org.organizationId, '--json'], env());
    expect(listed.json.allowlist).toEqual(['10.0.0.0/8', '192.0.2.7/32']);
    const removed = await runAdmin(['allowlist', 'remove', '--org', org.organizationId, '--ip', '10.0.0.0/8', '--json'], env());
    expect(removed.json).toMatchObject({ removed: true, allowlist: ['192.0.2.7/32'] });
  });

  test('account create and rate-limit set take effect', async () => {
    const org = await createTestOrg(stack.pool);
    const account = await runAdmin(['account', 'create', '--org', org.organizationId, '--name', 'Second', '--json'], env());
    expect(account.json.account_id).toMatch(/^account_/);
    const limits = await runAdmin(['rate-limit', 'set', '--org', org.organizationId, '--write', '7', '--json'], env());
    expect(limits.json).toEqual({ organization_id: org.organizationId, write: 7, read: 1000 });
    const response = await apiClient(stack.url, org.apiKey)('POST', '/keys/verify');
    expect(response.headers.get('x-ratelimit-limit')).toBe('7');
  });

  test('usage errors exit 2 and unknown organizations exit 1, each with one JSON error object', async () => {
    const usage = await runAdmin(['rate-limit', 'set', '--org', 'org_x', '--write', 'lots', '--json'], env());
    expect(usage.code).toBe(2);
    expect(usage.json.error.code).toBe('usage');
    const missing = await runAdmin(['key', 'list', '--org', 'org_doesnotexist000000000', '--json'], env());
    expect(missing.code).toBe(1);
    expect(missing.json.error.code).toBe('not_found');
  });

  test('a Postgres that accepts but answers nothing for 7 s (SIGSTOPped, overloaded) is waited out, not failed at the api’s 5 s connect timeout', async () => {
    // A proxy standing for a paused Postgres: the kernel accepts the connection, nothing answers until it goes on.
    const PAUSE_MS = 7_000;
    const database = new URL(testInfra().databaseUrl);
    const held: net.Socket[] = [];
    const proxy = net.createServer((socket) => {
      socket.pause();
      held.push(socket);
      setTimeout(() => {
        const upstream = net.connect(Number(database.port || 5432), database.hostname, () => {
          socket.pipe(upstream).pipe(socket);
          socket.resume();
        });
        for (const end of [socket, upstream]) end.on('error', () => [socket, upstream].forEach((each) => each.destroy()));
      }, PAUSE_MS);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const paused = new URL(database);
    paused.port = String((proxy.address() as net.AddressInfo).port);
    try {
      const started = Date.now();
      const answer = await runAdmin(['ach', 'exceptions', '--json'], { DATABASE_URL: paused.toString() });
      expect([answer.code, answer.json.error]).toEqual([0, undefined]);
      expect(Array.isArray(answer.json.exceptions)).toBe(true);
      expect(held.length).toBeGreaterThan(0);
      expect(Date.now() - started).toBeGreaterThanOrEqual(PAUSE_MS);
    } finally {
      held.forEach((socket) => socket.destroy());
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

describe('SPEC §14 operability', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ worker: false });
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('/healthz and /readyz answer 200 with both dependencies reachable', async () => {
    expect((await fetch(`${stack.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${stack.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { postgres: 'ok', temporal: 'ok' } });
  });

  test('/metrics is Prometheus text with request durations', async () => {
    await fetch(`${stack.url}/healthz`);
    const text = await (await fetch(`${stack.url}/metrics`)).text();
    expect(text).toContain('http_request_duration_seconds_bucket');
    expect(text).toContain('process_resident_memory_bytes');
  });

  test('/openapi.json is OpenAPI 3.1 version 0.0.1 and /docs renders it', async () => {
    const document = (await (await fetch(`${stack.url}/openapi.json`)).json()) as any;
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('0.0.1');
    const org = await createTestOrg(stack.pool);
    expectDocumented(document, [
      ['post', '/keys/verify', await apiClient(stack.url, org.apiKey)('POST', '/keys/verify')],
      ['post', '/keys/verify', await apiClient(stack.url, null)('POST', '/keys/verify')],
    ]);
    const docs = await fetch(`${stack.url}/docs/`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger-ui');
  });

  test('every response carries X-Request-Id, errors included', async () => {
    for (const response of [
      await fetch(`${stack.url}/healthz`),
      await fetch(`${stack.url}/nope`),
      await fetch(`${stack.url}/keys/verify`, { method: 'POST' }),
    ]) {
      expect(response.headers.get('x-request-id')).toMatch(/^req_\w{16,}$/);
    }
  });

  test('logs redact keys and personal data', async () => {
    const lines: string[] = [];
    const { Writable } = await import('node:stream');
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = createLogger('info', 'test', sink);
    log.info({ req: { headers: { authorization: 'Bearer sk_sandbox_secret' } }, user: { email: 'a@b.c', name: { first: 'Ann' } } }, 'x');
    expect(lines.join('')).not.toMatch(/sk_sandbox_secret|a@b\.c|Ann/);
  });
});

/** A dev server of npm start's kind, in memory, on a free port, logging to `name`.log in the test work dir. */
async function inMemoryDevServer(name: string) {
  return startTemporalDevServer({
    cliPath: testInfra().cliPath,
    port: await freePort(),
    uiPort: null,
    dbFile: null,
    namespace: 'default',
    logFile: path.join(testInfra().workDir, `${name}.log`),
  });
}

describe('SPEC §14, §20 readiness: 503 only without Postgres, Temporal named', () => {
  test('Postgres unreachable → 503 naming postgres', async () => {
    const config = testConfig();
    const deadPool = createPool(`postgres://postgres@127.0.0.1:${await freePort()}/nothing`, 2);
    const { connection, client } = await connectTemporal(testInfra().temporalAddress, 'default');
    const api = await startApi({ config, pool: deadPool, log: createLogger('silent'), temporal: client });
    try {
      const response = await fetch(`${api.url}/readyz`);
      expect(response.status).toBe(503);
      const body = (await response.json()) as any;
      expect(body.error.code).toBe('unavailable');
      expect(body.checks.temporal).toBe('ok');
      expect(body.checks.postgres).toMatch(/^unavailable/);
      expect(response.headers.get('retry-after')).toBeTruthy();
    } finally {
      await api.close();
      await connection.close();
      await deadPool.end();
    }
  });

  test('Temporal unreachable → 200 naming temporal unavailable (the API serves reads and writes without it)', async () => {
    const server = await inMemoryDevServer('temporal-readiness');
    const config = testConfig();
    const pool = createPool(testInfra().databaseUrl, 2);
    const { connection, client } = await connectTemporal(server.address, 'default');
    const api = await startApi({ config, pool, log: createLogger('silent'), temporal: client });
    try {
      expect((await fetch(`${api.url}/readyz`)).status).toBe(200);
      await server.stop();
      const response = await fetch(`${api.url}/readyz`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as any;
      expect(body.status).toBe('ready');
      expect(body.checks.postgres).toBe('ok');
      expect(body.checks.temporal).toMatch(/^unavailable: /);
    } finally {
      await api.close();
      await connection.close();
      await pool.end();
      await server.stop();
    }
  });
});

describe('closing the api', () => {
  test('cuts a connection that never sent a request once its grace is over, instead of waiting for its headers timeout', async () => {
    const pool = createPool(testInfra().databaseUrl, 2);
    const { connection, client } = await connectTemporal(testInfra().temporalAddress, 'default');
    const api = await startApi({ config: testConfig(), pool, log: createLogger('silent'), temporal: client });
    // As a browser's preconnect: a socket opened ahead of a request that never comes. Node counts it active
    // (not idle) until its 60 s headersTimeout.
    const socket = net.connect(Number(new URL(api.url).port), '127.0.0.1');
    const socketClosed = new Promise((resolve) => socket.on('close', resolve));
    socket.on('error', () => undefined);
    try {
      await new Promise((resolve) => socket.once('connect', resolve));
      await api.close();
      await socketClosed;
      expect(socket.destroyed).toBe(true);
    } finally {
      socket.destroy();
      await connection.close();
      await pool.end();
    }
  }, 20_000);
});

describe('database connections', () => {
  test('a checked-out connection whose server process dies fails its holder and leaves the process running', async () => {
    const pool = createPool(testInfra().databaseUrl, 2);
    const killer = new pg.Client({ connectionString: testInfra().databaseUrl });
    await killer.connect();
    const client = await pool.connect();
    try {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      // Held, not in a query: the server's FATAL arrives as an 'error' event on the client. Unheard, the
      // emitter would throw it out of the socket's handler and jest would report an uncaught exception.
      const ended = new Promise((resolve) => client.once('end', resolve));
      await killer.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await ended;
      await expect(client.query('SELECT 1')).rejects.toThrow();
    } finally {
      client.release(true);
      await killer.end();
      await pool.end();
    }
  });
});

describe('the dev server npm start runs', () => {
  test('caches the search-attribute metadata, and every one of our attributes is usable from its first start', async () => {
    const server = await inMemoryDevServer('temporal-search-attributes');
    const { connection, client } = await connectTemporal(server.address, 'default');
    try {
      // The CLI's default re-reads the metadata from the database on every read (see devServer.ts).
      const command = fs.readFileSync(`/proc/${server.process.pid}/cmdline`, 'utf8').split('\0');
      expect(command).toContain(`${SEARCH_ATTRIBUTES_REFRESH_ON_READ}=false`);
      // With the cache not forced, an attribute the server had not loaded before its first read would be refused
      // ("not defined") until the next refresh: every one of ours is known at once.
      const keys = Object.keys(SEARCH_ATTRIBUTES).map((name) => defineSearchAttributeKey(name, SearchAttributeType.KEYWORD));
      const handle = await client.workflow.start('noSuchWorkflow', {
        taskQueue: 'no-worker',
        workflowId: 'first-start',
        typedSearchAttributes: keys.map((key) => ({ key, value: `${key.name}-value` })),
      });
      const attributes = (await handle.describe()).typedSearchAttributes;
      expect(keys.map((key) => attributes.get(key))).toEqual(keys.map((key) => `${key.name}-value`));
    } finally {
      await connection.close();
      await server.stop();
    }
  });
});
