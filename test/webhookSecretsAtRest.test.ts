/**
 * SPEC §12 goal: after a production run that registers 10 endpoints, no webhook secret is anywhere in the
 * ledger database's files (data, WAL, server log) or the service's own output. `npm start` runs on an
 * embedded Postgres of its own DATA_DIR, so the scan covers that cluster only.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { apiClient, testInfra } from './support/harness';
import { freePort } from './support/ports';
import { runAdmin, spawnProject, stopGracefully } from './support/processes';

/** Every regular file under `dir`, following the link to a cluster kept elsewhere. */
function filesUnder(dir: string): string[] {
  const found: string[] = [];
  const pending = [dir];
  while (pending.length > 0) {
    const current = pending.pop()!;
    const stat = fs.statSync(current, { throwIfNoEntry: false });
    if (!stat) continue;
    if (stat.isDirectory()) for (const entry of fs.readdirSync(current)) pending.push(path.join(current, entry));
    else if (stat.isFile()) found.push(current);
  }
  return found;
}

test('0 occurrences of any of 10 endpoints secrets in the data files, WAL and logs of a production run', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-secrets-'));
  const ports = {
    PORT: await freePort(),
    TEMPORAL_PORT: await freePort(),
    TEMPORAL_UI_PORT: await freePort(),
    EMBEDDED_PG_PORT: await freePort(),
  };
  const key = randomBytes(32).toString('base64');
  const bankKey = randomBytes(32).toString('base64');
  const env: Record<string, string | undefined> = {
    DATA_DIR: dataDir,
    LEDGER_ENVIRONMENT: 'production',
    WEBHOOK_SECRET_KEY: key,
    BANK_DATA_KEY: bankKey,
    LOG_LEVEL: 'debug',
    TEMPORAL_CLI_PATH: testInfra().cliPath,
    DATABASE_URL: undefined,
    TEMPORAL_ADDRESS: undefined,
    TEMPORAL_METRICS_ADDRESS: 'off',
    ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
  };
  const run = spawnProject(process.execPath, ['ops/bin/start.js'], env);
  const secrets: string[] = [];
  const marker = `marker${randomBytes(8).toString('hex')}`;
  try {
    await run.waitFor(/Ctrl-C stops everything/);
    const databaseUrl = `postgres://postgres:postgres@127.0.0.1:${ports.EMBEDDED_PG_PORT}/ledger`;
    const org = await runAdmin(['org', 'create', '--name', 'Secrets at rest', '--json'], {
      DATABASE_URL: databaseUrl,
      LEDGER_ENVIRONMENT: 'production',
      WEBHOOK_SECRET_KEY: key,
      BANK_DATA_KEY: bankKey,
    });
    expect(org.code).toBe(0);
    const call = apiClient(`http://127.0.0.1:${ports.PORT}`, org.json.api_key);
    for (let i = 0; i < 10; i++) {
      const headers = { 'X-Idempotency-Key': `${marker}-${i}` };
      const body = { url: `https://93.184.215.14/${marker}/${i}` };
      const created = await call('POST', '/webhook', body, headers);
      expect(created.status).toBe(200);
      secrets.push(created.body.secret);
      expect((await call('POST', '/webhook', body, headers)).text).toBe(created.text);
    }
    expect((await stopGracefully(run)).code).toBe(0);

    const texts = [run.output(), ...filesUnder(dataDir).map((file) => fs.readFileSync(file).toString('latin1'))];
    const needles = secrets.flatMap((secret) => [secret, secret.slice('whsec_'.length)]);
    const occurrences = needles.reduce((sum, needle) => sum + texts.filter((text) => text.includes(needle)).length, 0);
    expect(occurrences).toBe(0);
    // The scan reads the rows those secrets belong to: their URLs are there, in the data files or WAL.
    expect(texts.some((text) => text.includes(`${marker}/9`))).toBe(true);
  } finally {
    await stopGracefully(run);
    const cluster = path.join(dataDir, 'postgres');
    const linked = fs.lstatSync(cluster, { throwIfNoEntry: false })?.isSymbolicLink() ? fs.realpathSync(cluster) : null;
    if (linked) fs.rmSync(linked, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}, 300_000);
