import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../src/config';
import { runToEnd } from './childProcess';
import { TEMPORAL_GO_MODULES, TEMPORAL_VERSIONS } from './temporalVersions';

/** Binaries built from the Go module proxy live under the git-ignored .tools/, one folder per release. */
export const TOOLS_DIR = path.join(REPO_ROOT, '.tools');
export const TOOLS_BIN = path.join(TOOLS_DIR, 'bin');

type Log = (message: string) => void;
const stderrLog: Log = (message) => process.stderr.write(`${message}\n`);

/** A Go program we build once with `go install` into `dir` and reuse at every later start. */
export interface GoTool {
  /** Named in progress lines and errors. */
  title: string;
  module: string;
  dir: string;
  /** The file `go install` writes: the last path element of the module's package. */
  builtName: string;
}

export const GO_TOOLS = {
  cli: { title: 'Temporal CLI', module: TEMPORAL_GO_MODULES.cli, dir: TOOLS_BIN, builtName: 'temporal' },
  server: {
    title: 'Temporal server',
    module: TEMPORAL_GO_MODULES.server,
    dir: path.join(TOOLS_DIR, `temporal-server-${TEMPORAL_VERSIONS.server}`),
    builtName: 'server',
  },
  sqlTool: {
    title: 'Temporal SQL tool',
    module: TEMPORAL_GO_MODULES.sqlTool,
    dir: path.join(TOOLS_DIR, `temporal-server-${TEMPORAL_VERSIONS.server}`),
    builtName: 'sql',
  },
  ui: {
    title: 'Temporal Web UI server',
    module: TEMPORAL_GO_MODULES.ui,
    dir: path.join(TOOLS_DIR, `temporal-ui-${TEMPORAL_VERSIONS.ui}`),
    builtName: 'server',
  },
} satisfies Record<string, GoTool>;

export function goToolPath(tool: GoTool): string {
  return path.join(tool.dir, tool.builtName);
}

function onPath(binary: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${binary}`], { encoding: 'utf8' });
  const location = found.stdout.trim();
  return found.status === 0 && location ? location : null;
}

/** Returns the tool's binary under .tools/, building it with `go install` (with progress lines) when absent. */
export async function ensureGoTool(tool: GoTool, log: Log = stderrLog): Promise<string> {
  const binary = goToolPath(tool);
  if (fs.existsSync(binary)) return binary;
  if (!onPath('go')) throw new Error(`No ${tool.title} at ${binary}, and no Go to build it with (go install ${tool.module}).`);
  log(`Building the ${tool.title} (${tool.module}) into ${tool.dir}; the first build takes a few minutes...`);
  fs.mkdirSync(tool.dir, { recursive: true });
  const started = Date.now();
  const progress = setInterval(() => log(`  still building the ${tool.title} (${Math.round((Date.now() - started) / 1000)} s)...`), 30_000);
  try {
    await runToEnd({
      command: 'go',
      args: ['install', tool.module],
      name: `go install ${tool.module}`,
      output: 'inherit',
      env: { ...process.env, GOBIN: tool.dir },
    });
  } finally {
    clearInterval(progress);
  }
  log(`Built the ${tool.title} in ${Math.round((Date.now() - started) / 1000)} s.`);
  return binary;
}

/**
 * Finds the Temporal CLI (TEMPORAL_CLI_PATH, our own build under .tools/, or a `temporal` on PATH), building
 * it once with `go install` when none exists. The SDK's own download needs the internet; this does not.
 */
export async function ensureTemporalCli(env: NodeJS.ProcessEnv = process.env, log: Log = stderrLog): Promise<string> {
  const configured = env.TEMPORAL_CLI_PATH;
  if (configured) {
    if (!fs.existsSync(configured)) throw new Error(`TEMPORAL_CLI_PATH=${configured} does not exist`);
    return configured;
  }
  if (fs.existsSync(goToolPath(GO_TOOLS.cli))) return goToolPath(GO_TOOLS.cli);
  return onPath('temporal') ?? ensureGoTool(GO_TOOLS.cli, log);
}

/**
 * moov-io/ach's achcli, the independent NACHA reader the ACH tests and bench check our files with (SPEC §24).
 * The module proxy refuses `go install …/achcli@version` (its go.mod has replace directives), so it is built
 * from the tools module in ops/achcli, whose go.mod and go.sum pin the release.
 */
export const ACHCLI_VERSION = 'v1.40.0';
const ACHCLI_MODULE_DIR = path.join(REPO_ROOT, 'ops', 'achcli');
export const ACHCLI_PATH = path.join(TOOLS_DIR, `moov-ach-${ACHCLI_VERSION}`, 'achcli');

/** Returns achcli under .tools/, building it once (about a minute); a build that dies midway leaves nothing behind. */
export async function ensureAchcli(log: Log = stderrLog): Promise<string> {
  if (fs.existsSync(ACHCLI_PATH)) return ACHCLI_PATH;
  if (!onPath('go')) throw new Error(`No achcli at ${ACHCLI_PATH}, and no Go to build it with (see ops/achcli/go.mod).`);
  log(`Building moov-io/ach's achcli ${ACHCLI_VERSION} into ${path.dirname(ACHCLI_PATH)}...`);
  fs.mkdirSync(path.dirname(ACHCLI_PATH), { recursive: true });
  const partial = `${ACHCLI_PATH}.${process.pid}.partial`;
  const started = Date.now();
  await runToEnd({
    command: 'go',
    // `go -C` builds in the tools module without changing our own working directory.
    args: ['-C', ACHCLI_MODULE_DIR, 'build', '-mod=readonly', '-o', partial, 'github.com/moov-io/ach/cmd/achcli'],
    name: 'go build achcli',
    output: 'inherit',
  });
  // Two builds racing (two suites, CI and a developer) each rename a whole binary into place.
  fs.renameSync(partial, ACHCLI_PATH);
  log(`Built achcli in ${Math.round((Date.now() - started) / 1000)} s.`);
  return ACHCLI_PATH;
}

/** The server, its SQL tool and the Web UI of `npm run cluster`, each built once. */
export async function ensureClusterTools(log: Log = stderrLog): Promise<{ server: string; sqlTool: string; ui: string }> {
  return {
    server: await ensureGoTool(GO_TOOLS.server, log),
    sqlTool: await ensureGoTool(GO_TOOLS.sqlTool, log),
    ui: await ensureGoTool(GO_TOOLS.ui, log),
  };
}
