import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { apiClient, eventually, testInfra } from './support/harness';
import { idempotencyKey, userBody } from './support/payments';
import { freePort } from './support/ports';
import type { Command } from 'commander';
import { buildAdminProgram } from '../src/cli/admin';
import { REPO, runAdmin, spawnProject, stopGracefully, type Spawned } from './support/processes';

/**
 * SPEC §16 `npm start` as a newcomer meets it: from a clone under a private directory, on a busy port, and
 * with its embedded Postgres or Temporal dev server killed under it.
 */

type Env = Record<string, string | undefined>;

async function startEnv(extra: Env = {}): Promise<{ env: Env; url: string; ports: Record<string, number> }> {
  const ports = {
    PORT: await freePort(),
    TEMPORAL_PORT: await freePort(),
    TEMPORAL_UI_PORT: await freePort(),
    EMBEDDED_PG_PORT: await freePort(),
  };
  const env: Env = {
    LOG_LEVEL: 'warn',
    TEMPORAL_CLI_PATH: testInfra().cliPath,
    DATABASE_URL: undefined,
    TEMPORAL_ADDRESS: undefined,
    SANDBOX_CONFIRM_SECONDS: '3600',
    TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${await freePort()}`,
    ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
    ...extra,
  };
  return { env, url: `http://127.0.0.1:${ports.PORT}`, ports };
}

/** A directory every user can pass through (the shared dir root needs for Postgres binaries and clusters). */
function openTempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}

function demoKeyOf(started: Spawned): string {
  const key = /Demo sandbox API key \(shown once\): (sk_sandbox_\w+)/.exec(started.output())?.[1];
  if (!key) throw new Error(`no demo key in:\n${started.output()}`);
  return key;
}

/** A write through every layer: a user, an approved cash_in, and the worker moving it to `available`. */
async function writeThroughEveryLayer(url: string, apiKey: string): Promise<void> {
  const call = apiClient(url, apiKey);
  const user = await call('POST', '/user', userBody());
  expect(user.status).toBe(200);
  const intent = await call(
    'POST',
    '/intent',
    { direction: 'cash_in', user_id: user.body.id, amount: 1_250, currency: 'USD' },
    idempotencyKey(),
  );
  if (intent.status !== 200) throw new Error(`POST /intent answered ${intent.status}: ${intent.text}`);
  expect(intent.body.status).toBe('approved');
  const transactionId = intent.body.transactions[0].id as string;
  // The api's signal reaches the workflow once it runs; the worker's activity then writes `available`.
  await eventually(
    async () =>
      (await call('POST', `/simulate/transaction/${transactionId}/confirm`, undefined, idempotencyKey())).status === 200 ? true : undefined,
    60_000,
    'confirm accepted',
  );
  await eventually(
    async () => ((await call('GET', `/transaction/${transactionId}`)).body.status === 'available' ? true : undefined),
    60_000,
    `${transactionId} available`,
  );
}

async function readyAnswer(url: string): Promise<{ status: number | string; checks: Record<string, string> }> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) });
    const body = (await response.json()) as { checks?: Record<string, string> };
    return { status: response.status, checks: body.checks ?? {} };
  } catch (error) {
    return { status: (error as Error).message, checks: {} };
  }
}

async function readyStatus(url: string): Promise<number | string> {
  return (await readyAnswer(url)).status;
}

/** Polls /readyz until it answers `status`; the failure names every answer seen. */
async function readyzBecomes(url: string, status: number, timeoutMs: number, what: string): Promise<void> {
  const seen: Array<number | string> = [];
  await eventually(
    async () => {
      const answer = await readyStatus(url);
      if (seen[seen.length - 1] !== answer) seen.push(answer);
      return answer === status ? true : undefined;
    },
    timeoutMs,
    `${what} (answers seen: ${seen.join(', ')})`,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; answers seen: ${seen.join(', ')}`);
  });
}

function pidIn(file: string): number {
  const pid = Number(fs.readFileSync(file, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no pid in ${file}`);
  return pid;
}

/**
 * The README's path from a clone to the quickstart ("Use it from TypeScript"): the first `sh` block there,
 * one command a line (its comment dropped), exactly three — the service, the SDK install, the snippet.
 */
function readmeNewcomerCommands(): string[] {
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Use it from TypeScript'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const commands = block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
  expect(commands).toHaveLength(3);
  return commands;
}

/** The README's TypeScript snippet (the same file as sdk/examples/quickstart.ts, which test/sdk.test.ts holds it to). */
function readmeSnippet(): string {
  const readme = fs.readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Use it from TypeScript'));
  const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!snippet) throw new Error('no ts block under "Use it from TypeScript" in README.md');
  return snippet;
}

/**
 * One README command line, as a shell would run it: its leading NAME=value words the environment, the rest the
 * command and its arguments, the placeholders replaced by this run's clone, API key and address.
 */
function runReadmeCommand(
  line: string,
  values: { clone: string; empty: string; url: string; apiKey: string },
  env: Env,
  cwd: string,
  options: { group?: boolean } = {},
): Spawned {
  const words = line
    .replace('/path/to/clone', values.clone)
    .replace('sk_sandbox_…', values.apiKey)
    .replace('http://127.0.0.1:3000', values.url)
    .split(/\s+/);
  const assignments = words.filter((word, index) => /^[A-Z_]+=/.test(word) && words.slice(0, index).every((w) => /^[A-Z_]+=/.test(w)));
  const [command, ...args] = words.slice(assignments.length);
  const assigned = Object.fromEntries(assignments.map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]));
  return spawnProject(command!, args, { ...env, ...assigned }, cwd, options);
}

describe('SPEC §16 npm start for a newcomer', () => {
  test("from a clone under a 0700 directory, the README's three commands: npm start, the SDK installed in an empty directory, the quickstart run there", async () => {
    // Inside the repository's own (ignored) scratch folder, so node_modules can be hard-linked, not copied. The
    // 0700 directory: the embedded Postgres user cannot reach it when we are root.
    const scratch = path.join(REPO, '.scratch');
    fs.mkdirSync(scratch, { recursive: true });
    const privateDir = fs.mkdtempSync(path.join(scratch, 'private-'));
    fs.chmodSync(privateDir, 0o700);
    const clone = path.join(privateDir, 'ledger');
    fs.mkdirSync(clone);
    const entries = ['package.json', 'package-lock.json', 'tsconfig.json', 'ops', 'src', 'workflows', 'activities', 'migrations'];
    // The console's page and the SDK's dist (built), as a clone after `npm ci` (its `prepare`) has them.
    for (const entry of [...entries, 'console', 'sdk']) {
      fs.cpSync(path.join(REPO, entry), path.join(clone, entry), { recursive: true });
    }
    execFileSync('cp', ['-al', path.join(REPO, 'node_modules'), path.join(clone, 'node_modules')]);
    // Outside the repository, so nothing resolves through its node_modules.
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-newcomer-'));
    const shared = openTempDir('ledger-pg-shared-');
    const { env, url } = await startEnv({ EMBEDDED_PG_SHARED_DIR: shared, DATA_DIR: undefined });
    const [start, install, quickstart] = readmeNewcomerCommands();
    // In a process group of its own, as a terminal runs it: `npm start` is npm running the service, and Ctrl-C
    // (SIGINT to the group) is how the README says to stop both.
    const started = runReadmeCommand(start!, { clone, empty, url, apiKey: '' }, env, clone, { group: true });
    try {
      await started.waitFor(/Ctrl-C stops everything/, 180_000);
      expect(started.output()).not.toMatch(/EACCES|\n\s+at /);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      const apiKey = demoKeyOf(started);
      expect((await apiClient(url, apiKey)('POST', '/keys/verify')).status).toBe(200);
      expect(fs.existsSync(path.join(clone, '.data', 'postgres'))).toBe(true);

      const installed = await runReadmeCommand(install!, { clone, empty, url, apiKey }, {}, empty).exited;
      expect(installed.code).toBe(0);
      // The snippet as the README shows it, saved where the README says.
      fs.writeFileSync(path.join(empty, 'quickstart.ts'), readmeSnippet());
      const ran = runReadmeCommand(quickstart!, { clone, empty, url, apiKey }, {}, empty);
      const exit = await ran.exited;
      const lines = ran.output().trim().split('\n');
      expect({ code: exit.code, lines: lines.length }).toEqual({ code: 0, lines: 3 });
      expect(lines[0]).toMatch(/^intent intent_\S+ approved$/);
      expect(lines[1]).toMatch(/^transaction txn_\S+ pending 1250$/);
      expect(lines[2]).toMatch(/^webhook user\.created user_\S+ enabled$/);
      // Ctrl-C: the service stops everything it started and says so; npm then ends (by the signal or with 0).
      process.kill(-started.child.pid!, 'SIGINT');
      await started.waitFor(/^Stopped\.$/m, 60_000);
      const stopped = await started.exited;
      expect(stopped.code === 0 || stopped.signal === 'SIGINT').toBe(true);
      expect(started.output()).toMatch(/SIGINT: stopping \(.*\)\.\.\./);
    } finally {
      if (started.child.exitCode === null && started.child.signalCode === null) process.kill(-started.child.pid!, 'SIGKILL');
      await started.exited;
      fs.rmSync(privateDir, { recursive: true, force: true });
      fs.rmSync(shared, { recursive: true, force: true });
      fs.rmSync(empty, { recursive: true, force: true });
    }
  }, 300_000);

  test('a busy embedded Postgres port stops the start with one line naming the port and EMBEDDED_PG_PORT, exit 1', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-busy-'));
    const { env, ports } = await startEnv({ DATA_DIR: dataDir });
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(ports.EMBEDDED_PG_PORT, '127.0.0.1', resolve));
    try {
      const started = spawnProject(process.execPath, ['ops/bin/start.js'], env);
      const { code } = await started.exited;
      expect(code).toBe(1);
      expect(started.output()).toContain(`port ${ports.EMBEDDED_PG_PORT} (EMBEDDED_PG_PORT) is already in use`);
      expect(started.output()).not.toMatch(/\n\s+at |undefined/);
    } finally {
      squatter.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  test('SIGKILLed Postgres and Temporal dev server are restarted, and writes work again: /readyz 503 without Postgres, 200 naming the dev server without it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-supervised-'));
    const { env, url } = await startEnv({ DATA_DIR: dataDir });
    // A process group of its own, as a terminal runs it: the Ctrl-C below is SIGINT to the group.
    const started = spawnProject(process.execPath, ['ops/bin/start.js'], env, REPO, { group: true });
    try {
      await started.waitFor(/Ctrl-C stops everything/, 180_000);
      const apiKey = demoKeyOf(started);
      const withOutput = (error: Error) => {
        throw new Error(`${error.message}\nnpm start printed:\n${started.output().slice(-6_000)}`);
      };
      for (const [component, pidFile] of [
        ['embedded Postgres', path.join(dataDir, 'postgres', 'postmaster.pid')],
        ['Temporal dev server', path.join(dataDir, 'temporal', 'server.pid')],
      ] as const) {
        const pid = pidIn(pidFile);
        process.kill(pid, 'SIGKILL');
        if (component === 'embedded Postgres') {
          await readyzBecomes(url, 503, 10_000, `/readyz 503 after killing the ${component}`).catch(withOutput);
          await started.waitFor(new RegExp(`${component} was killed by SIGKILL; restarting`), 10_000);
          await readyzBecomes(url, 200, 60_000, `/readyz 200 after the ${component} restarted`).catch(withOutput);
        } else {
          // SPEC §20: the API serves without Temporal, so /readyz stays 200 and names the dev server's outage
          // (asked as soon as the supervisor says it will restart it: 500 ms, then the server's own start).
          await started.waitFor(new RegExp(`${component} was killed by SIGKILL; restarting`), 10_000);
          const during = await readyAnswer(url);
          expect(during.status).toBe(200);
          expect(during.checks.temporal_dev_server).toMatch(/^unavailable/);
          await eventually(
            async () => ((await readyAnswer(url)).checks.temporal_dev_server === 'ok' ? true : undefined),
            60_000,
            `/readyz naming the restarted ${component} ok`,
          ).catch(withOutput);
        }
        expect(pidIn(pidFile)).not.toBe(pid);
        await writeThroughEveryLayer(url, apiKey).catch(withOutput);
      }
      // Ctrl-C: the service stops everything it started and says so; npm then ends (by the signal or with 0).
      process.kill(-started.child.pid!, 'SIGINT');
      await started.waitFor(/^Stopped\.$/m, 60_000);
      const stopped = await started.exited;
      expect(stopped.code === 0 || stopped.signal === 'SIGINT').toBe(true);
      expect(started.output()).toMatch(/SIGINT: stopping \(.*\)\.\.\./);
    } finally {
      if (started.child.exitCode === null && started.child.signalCode === null) process.kill(-started.child.pid!, 'SIGKILL');
      await started.exited;
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);

  test('a Temporal dev server that runs but stops doing its work is killed and restarted by its supervisor, and writes work again (issue 38)', async () => {
    // Issue 38: the CLI's dev server kept its frontend up while its SQLite connection failed every query for
    // good; nothing exited, so nothing restarted it. A SIGSTOPped server is the same to its supervisor — alive,
    // answering no health check — and is made at will.
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-unresponsive-'));
    const { env, url } = await startEnv({ DATA_DIR: dataDir, TEMPORAL_DEV_SERVER_UNRESPONSIVE_SECONDS: '5' });
    const started = spawnProject(process.execPath, ['ops/bin/start.js'], env);
    const pidFile = path.join(dataDir, 'temporal', 'server.pid');
    let stoppedPid: number | null = null;
    try {
      await started.waitFor(/Ctrl-C stops everything/, 180_000);
      const apiKey = demoKeyOf(started);
      const withOutput = (error: Error) => {
        throw new Error(`${error.message}\nnpm start printed:\n${started.output().slice(-6_000)}`);
      };
      // A server doing its work passes: one whole write through it first, without a kill.
      await writeThroughEveryLayer(url, apiKey).catch(withOutput);
      expect(started.output()).not.toMatch(/passed no health check/);

      stoppedPid = pidIn(pidFile);
      process.kill(stoppedPid, 'SIGSTOP');
      await started.waitFor(
        /Temporal dev server runs but passed no health check for \d+ s \(last: .*\); killing it so that it restarts/,
        60_000,
      );
      await started.waitFor(/Temporal dev server was killed by SIGKILL; restarting/, 10_000);
      await eventually(
        async () => ((await readyAnswer(url)).checks.temporal_dev_server === 'ok' && pidIn(pidFile) !== stoppedPid ? true : undefined),
        60_000,
        'the restarted Temporal dev server answering',
      ).catch(withOutput);
      await writeThroughEveryLayer(url, apiKey).catch(withOutput);
    } finally {
      if (stoppedPid !== null) {
        try {
          process.kill(stoppedPid, 'SIGKILL');
        } catch {
          // killed by its supervisor, as it should be
        }
      }
      await stopGracefully(started);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);

  test('a component that keeps failing to restart ends npm start with exit 1 naming it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-giveup-'));
    // A Temporal CLI that works until the test breaks it, so every restart fails the same way.
    const broken = path.join(dataDir, 'cli-broken');
    const wrapper = path.join(dataDir, 'temporal-cli');
    fs.writeFileSync(
      wrapper,
      `#!/bin/sh\nif [ -e '${broken}' ]; then echo 'cli broken by the test' >&2; exit 3; fi\nexec '${testInfra().cliPath}' "$@"\n`,
      { mode: 0o755 },
    );
    const { env } = await startEnv({ DATA_DIR: dataDir, TEMPORAL_CLI_PATH: wrapper });
    const started = spawnProject(process.execPath, ['ops/bin/start.js'], env);
    try {
      await started.waitFor(/Ctrl-C stops everything/, 180_000);
      fs.writeFileSync(broken, '');
      process.kill(pidIn(path.join(dataDir, 'temporal', 'server.pid')), 'SIGKILL');
      const { code } = await started.exited;
      expect(code).toBe(1);
      expect(started.output()).toMatch(/Temporal dev server failed 5 times in a row; giving up/);
    } finally {
      await stopGracefully(started);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe('SPEC §13 operator CLI for a newcomer', () => {
  const env = () => ({ DATABASE_URL: testInfra().databaseUrl });

  test('every command and subcommand has a help line', () => {
    const program = buildAdminProgram(() => {
      throw new Error('no command runs while the tree is walked');
    });
    const missing: string[] = [];
    const walk = (command: Command, trail: string[]) => {
      for (const sub of command.commands) {
        const name = [...trail, sub.name()];
        if (sub.description().trim() === '') missing.push(name.join(' '));
        walk(sub, name);
      }
    };
    walk(program, []);
    expect(program.commands.length).toBeGreaterThanOrEqual(10);
    expect(missing).toEqual([]);
  });

  test('rate-limit set without --write or --read is a usage error with a message (exit 2)', async () => {
    const human = await runAdmin(['rate-limit', 'set', '--org', 'org_x'], env());
    expect(human.code).toBe(2);
    expect(human.stdout).toMatch(/give --write and\/or --read/);
    const json = await runAdmin(['rate-limit', 'set', '--org', 'org_x', '--json'], env());
    expect(json.code).toBe(2);
    expect(json.json.error).toEqual({ code: 'usage', message: 'give --write and/or --read' });
  });

  test('an invalid IP for allowlist add or remove is a usage error naming it (exit 2), not a failed command', async () => {
    for (const action of ['add', 'remove']) {
      const human = await runAdmin(['allowlist', action, '--org', 'org_x', '--ip', '999.1.2.3'], env());
      expect(human.code).toBe(2);
      expect(human.stdout).toMatch(/--ip <cidr>.*999\.1\.2\.3.*not an IPv4\/IPv6 address or CIDR range/);
      const json = await runAdmin(['allowlist', action, '--org', 'org_x', '--ip', '10.0.0.0/33', '--json'], env());
      expect(json.code).toBe(2);
      expect(json.json.error.code).toBe('usage');
    }
  });

  test('npm run admin runs a bundle built once into dist/ and reused while no source changed', async () => {
    expect((await runAdmin(['--help'], env())).code).toBe(0);
    const bundle = path.join(REPO, 'dist', 'admin.js');
    const builtAt = fs.statSync(bundle).mtimeMs;
    const again = await runAdmin(['--help'], env());
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Operator CLI of the payments ledger');
    expect(fs.statSync(bundle).mtimeMs).toBe(builtAt);
  });
});
