import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RESULTS_DIR, writeResults } from './results';

/**
 * `npm run bench`: runs every bench in turn as its own process and writes one JSON summary to
 * bench/results/run-<time>.json. `npm run bench -- ledger edge` runs only those.
 *
 * Each bench prints its own progress lines (passed through as they come, prefixed with its name) and measures
 * its figures beside a baseline in the same run; each makes its own uniquely named Postgres database and
 * drops it, and runs a Temporal server of its own (test/support/scratch.ts): by default the dev server on a
 * SQLite file, as `npm start` does.
 * The summary holds, per bench: the exit code, the seconds it took, and its results — the JSON file(s) it
 * wrote to bench/results/ during the run, else the last JSON object it printed.
 *
 * Sizes are the benches' defaults (a few minutes in all); the larger figures are the same benches with a
 * size variable, e.g. `BENCH_INTENTS=10000 npm run bench -- ledger` (bench/ledger.ts says which).
 *
 * The Temporal topology: `npm run bench -- --topology cluster` (or BENCH_TEMPORAL=cluster in the environment)
 * runs the benches that use Temporal (ledger, settlement, report, statement; replay keeps the dev server) on `npm run cluster`'s server on Postgres
 * (ops/temporalServer.ts; 4 history shards, persistence and visibility in two fresh databases that
 * are dropped at the end) instead of the dev server; edge, settlementDb, search, balances and journalCost do not use Temporal. The flag sets
 * BENCH_TEMPORAL for every bench it runs, and the summary records it. Process counts of the lifecycle bench
 * pass through the environment: `BENCH_API_PROCESSES=2 BENCH_WORKER_PROCESSES=2 npm run bench -- --topology
 * cluster ledger`. On a Postgres with the default max_connections (100), the cluster's Temporal server
 * (~55 connections under load) and several api/worker processes (up to DATABASE_POOL_MAX + 1 each) run out
 * of connections: point BENCH_DATABASE_URL at a Postgres with room (docs/production.md).
 * `npm run bench -- capacity` runs bench/capacity.ts, the per-transaction costs on the cluster topology
 * (docs/production.md); it is not part of the default run, nor is `npm run bench -- intake` (bench/intake.ts, SPEC §20:
 * POST /intent vs a bare start loop, and writes through a SIGSTOPped Temporal server).
 */
const BENCHES = [
  'edge',
  'ledger',
  'settlementDb',
  'settlement',
  'report',
  'balances',
  'statement',
  'journalCost',
  'search',
  'replay',
  'sdk',
  'batch',
  'console',
  'ach',
  'achReturns',
  'achLoad',
  'limits',
] as const;
const OPTIONAL_BENCHES = ['capacity', 'intake'] as const;
const REPO_ROOT = path.resolve(__dirname, '..');

interface BenchRun {
  name: string;
  exit_code: number | null;
  seconds: number;
  result_files: string[];
  results: unknown[];
}

/** The last top-level JSON object in `text` (a line that is `{` through the next line that is `}`), if any. */
function lastPrintedJson(text: string): unknown {
  const lines = text.split('\n');
  for (let end = lines.length - 1; end >= 0; end -= 1) {
    if (lines[end] !== '}') continue;
    const start = lines.lastIndexOf('{', end);
    if (start < 0) return undefined;
    try {
      return JSON.parse(lines.slice(start, end + 1).join('\n'));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function runOne(name: string, index: number, total: number, topology: string): Promise<BenchRun> {
  const started = Date.now();
  const before = new Set(fs.existsSync(RESULTS_DIR) ? fs.readdirSync(RESULTS_DIR) : []);
  process.stdout.write(`\n== [${index}/${total}] bench ${name} (bench/${name}.ts)\n`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'bench', `${name}.ts`)], {
      cwd: REPO_ROOT,
      env: { ...process.env, BENCH_TEMPORAL: topology },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let partial = { stdout: '', stderr: '' };
    const relay = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      const text = partial[stream] + chunk.toString();
      const lines = text.split('\n');
      partial = { ...partial, [stream]: lines.pop() ?? '' };
      for (const line of lines) {
        if (stream === 'stdout') output += `${line}\n`;
        process[stream].write(`[${name}] ${line}\n`);
      }
    };
    child.stdout.on('data', relay('stdout'));
    child.stderr.on('data', relay('stderr'));
    // A heartbeat between a bench's own lines, so a long phase never looks hung.
    const heartbeat = setInterval(() => process.stdout.write(`[run] ${name}: ${((Date.now() - started) / 1000).toFixed(0)} s\n`), 60_000);
    child.on('exit', (exitCode) => {
      clearInterval(heartbeat);
      if (partial.stdout) output += partial.stdout;
      const written = (fs.existsSync(RESULTS_DIR) ? fs.readdirSync(RESULTS_DIR) : [])
        .filter((file) => !before.has(file) && file.startsWith(`${name}-`) && file.endsWith('.json'))
        .sort();
      const fromFiles = written.map((file) => JSON.parse(fs.readFileSync(path.join(RESULTS_DIR, file), 'utf8')) as unknown);
      const printed = fromFiles.length === 0 ? lastPrintedJson(output) : undefined;
      resolve({
        name,
        exit_code: exitCode,
        seconds: Number(((Date.now() - started) / 1000).toFixed(1)),
        result_files: written.map((file) => path.join('bench', 'results', file)),
        results: printed === undefined ? fromFiles : [printed],
      });
    });
  });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  let topology = process.env.BENCH_TEMPORAL || 'dev';
  const asked: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '--topology') topology = args[++i] ?? '';
    else if (arg.startsWith('--topology=')) topology = arg.slice('--topology='.length);
    else asked.push(arg);
  }
  if (topology !== 'dev' && topology !== 'cluster') {
    process.stderr.write(`topology ${JSON.stringify(topology)} (--topology or BENCH_TEMPORAL): dev or cluster\n`);
    process.exit(2);
  }
  const known: readonly string[] = [...BENCHES, ...OPTIONAL_BENCHES];
  const unknown = asked.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    process.stderr.write(`unknown bench(es): ${unknown.join(', ')}; known: ${known.join(', ')}\n`);
    process.exit(2);
  }
  const names = asked.length > 0 ? asked : [...BENCHES];
  const startedAt = new Date().toISOString();
  const runs: BenchRun[] = [];
  process.stdout.write(`Temporal topology: ${topology}\n`);
  for (const [index, name] of names.entries()) runs.push(await runOne(name, index + 1, names.length, topology));
  const summary = {
    started_at: startedAt,
    finished_at: new Date().toISOString(),
    cores: os.cpus().length,
    load_average: os.loadavg(),
    node: process.version,
    topology,
    benches: runs,
  };
  const file = writeResults('run', summary);
  process.stdout.write('\n');
  for (const run of runs)
    process.stdout.write(
      `${run.exit_code === 0 ? 'ok  ' : 'FAIL'} ${run.name.padEnd(12)} ${run.seconds} s  ${run.result_files.join(', ') || '(printed results)'}\n`,
    );
  process.stdout.write(`summary: ${path.relative(REPO_ROOT, file)}\n`);
  process.exit(runs.every((run) => run.exit_code === 0) ? 0 : 1);
}

void main();
