#!/usr/bin/env node
// `npm test`: the typecheck of both TypeScript projects and the two jest projects — jest.config.js (every suite
// on the in-memory dev server) and jest.cluster.config.js (the cluster project) — at the same time instead of one
// after another. Each waits on servers, timers and child processes for much of its time, so together they fill
// the cores the way one after the other did not. Each has a Postgres database and a Temporal server of its own
// (its globalSetup), and every suite its own task queues and organizations, so they share nothing but the
// machine. The typechecks run at a lower priority: they only fill the time the suites leave idle.
//
// Every output line is prefixed with its job's name; the summary gives each job's seconds and exit code, and
// the exit code is 1 if any job failed. Arguments go to both jest runs (`npm test -- --silent`).
'use strict';
const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const root = path.resolve(__dirname, '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
// A path or pattern given (`npm test -- test/ledger.test.ts`) may name suites of one project only: the other
// then finds none, which is no failure.
const extra = process.argv.length > 2 ? ['--passWithNoTests', ...process.argv.slice(2)] : [];

const JOBS = [
  { name: 'tsc', command: bin('tsc'), args: ['--noEmit', '-p', 'tsconfig.json'], nice: 10 },
  { name: 'tsc console', command: bin('tsc'), args: ['--noEmit', '-p', 'console/tsconfig.json'], nice: 10 },
  { name: 'jest', command: bin('jest'), args: extra, nice: 0 },
  { name: 'cluster', command: bin('jest'), args: ['-c', 'jest.cluster.config.js', ...extra], nice: 0 },
];

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
  const results = await Promise.all(JOBS.map(run));
  process.stdout.write('\nnpm test:\n');
  for (const { job, code, seconds } of results)
    process.stdout.write(`  ${code === 0 ? 'ok  ' : 'FAIL'} ${job.name.padEnd(12)} ${seconds.toFixed(1)} s\n`);
  process.stdout.write(`  all in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  process.exitCode = results.every((result) => result.code === 0) ? 0 : 1;
}

void main();
