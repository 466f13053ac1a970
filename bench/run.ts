import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * `npm run bench`: runs every bench in turn as its own process (each prints its own progress lines and
 * measures its figures beside a baseline in the same run), and writes a JSON summary of what ran, for how
 * long and with what exit code to bench/results/. `npm run bench -- edge ledger` runs only those.
 */
const BENCHES = ['edge', 'ledger', 'settlementDb', 'settlement', 'report'] as const;
const REPO_ROOT = path.resolve(__dirname, '..');

function runOne(name: string): Promise<{ name: string; exitCode: number | null; seconds: number }> {
  const started = Date.now();
  process.stdout.write(`\n== bench ${name} (bench/${name}.ts)\n`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'bench', `${name}.ts`)], { cwd: REPO_ROOT, stdio: 'inherit' });
    child.on('exit', (exitCode) => resolve({ name, exitCode, seconds: (Date.now() - started) / 1000 }));
  });
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((name) => !(BENCHES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    process.stderr.write(`unknown bench(es): ${unknown.join(', ')}; known: ${BENCHES.join(', ')}\n`);
    process.exit(2);
  }
  const names = asked.length > 0 ? asked : [...BENCHES];
  const results = [];
  for (const [index, name] of names.entries()) {
    process.stdout.write(`[${index + 1}/${names.length}] ${name}\n`);
    results.push(await runOne(name));
  }
  const dir = path.join(REPO_ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `run-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.writeFileSync(file, `${JSON.stringify({ finished_at: new Date().toISOString(), results }, null, 2)}\n`);
  process.stdout.write(`\nsummary: ${file}\n`);
  process.exit(results.every((result) => result.exitCode === 0) ? 0 : 1);
}

void main();
