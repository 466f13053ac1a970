import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../config';

/** The newest Temporal CLI tag whose go.mod has no `replace`, so `go install` accepts it. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';
export const TOOLS_BIN = path.join(REPO_ROOT, '.tools', 'bin');
const BUILT_CLI = path.join(TOOLS_BIN, 'temporal');

function onPath(binary: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${binary}`], { encoding: 'utf8' });
  const location = found.stdout.trim();
  return found.status === 0 && location ? location : null;
}

/**
 * Finds the Temporal CLI (TEMPORAL_CLI_PATH, a `temporal` on PATH, or our own build under .tools/), building
 * it once with `go install` when none exists. The SDK's own download needs the internet; this does not.
 */
export async function ensureTemporalCli(
  env: NodeJS.ProcessEnv = process.env,
  log: (message: string) => void = (message) => process.stderr.write(`${message}\n`),
): Promise<string> {
  const configured = env.TEMPORAL_CLI_PATH;
  if (configured) {
    if (!fs.existsSync(configured)) throw new Error(`TEMPORAL_CLI_PATH=${configured} does not exist`);
    return configured;
  }
  if (fs.existsSync(BUILT_CLI)) return BUILT_CLI;
  const installed = onPath('temporal');
  if (installed) return installed;
  if (!onPath('go')) {
    throw new Error('No Temporal CLI found: set TEMPORAL_CLI_PATH, put `temporal` on PATH, or install Go so it can be built.');
  }
  log(`Building the Temporal CLI (${TEMPORAL_CLI_MODULE}) into ${TOOLS_BIN}; the first build takes a few minutes...`);
  fs.mkdirSync(TOOLS_BIN, { recursive: true });
  const started = Date.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn('go', ['install', TEMPORAL_CLI_MODULE], {
      env: { ...env, GOBIN: TOOLS_BIN },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const progress = setInterval(
      () => log(`  still building the Temporal CLI (${Math.round((Date.now() - started) / 1000)} s)...`),
      30_000,
    );
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(progress);
      if (code === 0) resolve();
      else reject(new Error(`go install ${TEMPORAL_CLI_MODULE} exited with ${code}`));
    });
  });
  log(`Built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)} s.`);
  return BUILT_CLI;
}

if (require.main === module) {
  ensureTemporalCli()
    .then((cli) => process.stdout.write(`${cli}\n`))
    .catch((error: Error) => {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    });
}
