#!/usr/bin/env node
// `npm test`: the typecheck of both TypeScript projects, the main jest project (jest.config.js: every suite on the
// in-memory dev server) and the cluster project (jest.cluster.config.js: the lifecycle, settlement and webhook
// suites on the Temporal server of `npm run cluster`) all at once; then the processes project
// (jest.processes.config.js: whole topologies in processes of their own, `npm run cluster` and `npm run simulate`).
// Measured on a quiet 2-core box (bench/results/2026-11-27-test-suite.md): the main project left the cores 18–36%
// idle and the cluster project's suites 70% (they wait on timers and servers), so those share the cores; the
// processes project keeps both cores busy on its own (its suites start Temporal servers, Postgres and api and
// worker processes), so it runs alone after them.
//
// Every output line is prefixed with its job's name; the summary gives each job's seconds and exit code, and
// the exit code is 1 if any job failed. Every stage runs even after a failure, so one run shows every failing
// suite. Arguments go to every jest run (`npm test -- --silent`).
'use strict';
const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const root = path.resolve(__dirname, '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
// A path or pattern given (`npm test -- test/ledger.test.ts`) may name suites of one project only: the others
// then find none, which is no failure.
const extra = process.argv.length > 2 ? ['--passWithNoTests', ...process.argv.slice(2)] : [];

/** Stages run one after the other; the jobs of one stage at once. */
const STAGES = [
  [
    { name: 'tsc', command: bin('tsc'), args: ['--noEmit', '-p', 'tsconfig.json'], nice: 10 },
    { name: 'tsc console', command: bin('tsc'), args: ['--noEmit', '-p', 'console/tsconfig.json'], nice: 10 },
    { name: 'jest', command: bin('jest'), args: extra, nice: 0 },
    { name: 'cluster', command: bin('jest'), args: ['-c', 'jest.cluster.config.js', ...extra], nice: 0 },
  ],
  [{ name: 'processes', command: bin('jest'), args: ['-c', 'jest.processes.config.js', ...extra], nice: 0 }],
];
const JOBS = STAGES.flat();

/** Runs one job, its stdout and stderr relayed line by line under its name; resolves with its exit code. */
function run(job) {
  const started = Date.now();
  const child = spawn(job.command, job.args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  if (job.nice > 0) {
    try {
      os.setPriority(child.pid, job.nice);
    } catch {
      // Not allowed here: it runs at the same priority, which only changes the order the cores serve them.
    }
  }
  const width = Math.max(...JOBS.map((each) => each.name.length));
  const relay = (stream, out) =>
    readline.createInterface({ input: stream }).on('line', (line) => out.write(`[${job.name.padEnd(width)}] ${line}\n`));
  relay(child.stdout, process.stdout);
  relay(child.stderr, process.stderr);
  return new Promise((resolve) => {
    child.on('error', (error) => {
      process.stderr.write(`[${job.name}] could not start: ${error.message}\n`);
      resolve({ job, code: 1, seconds: 0 });
    });
    child.on('close', (code, signal) => resolve({ job, code: code ?? (signal ? 1 : 0), seconds: (Date.now() - started) / 1000 }));
  });
}

async function main() {
  const started = Date.now();
  const results = [];
  for (const stage of STAGES) results.push(...(await Promise.all(stage.map(run))));
  process.stdout.write('\nnpm test:\n');
  for (const { job, code, seconds } of results)
    process.stdout.write(`  ${code === 0 ? 'ok  ' : 'FAIL'} ${job.name.padEnd(12)} ${seconds.toFixed(1)} s\n`);
  process.stdout.write(`  all in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  process.exitCode = results.every((result) => result.code === 0) ? 0 : 1;
}

void main();
