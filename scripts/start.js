#!/usr/bin/env node
// `npm start` on a fresh clone: installs the npm packages when they are missing, then runs the whole
// service (src/bin/main.ts), which builds the Temporal CLI on first use. Plain Node: nothing is installed yet.
'use strict';
const { spawnSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const lock = path.join(root, 'package-lock.json');
const stamp = path.join(root, 'node_modules', '.package-lock.json');
const stale = !fs.existsSync(stamp) || fs.statSync(stamp).mtimeMs < fs.statSync(lock).mtimeMs;
if (stale) {
  process.stdout.write('Installing npm packages (npm ci)...\n');
  const installed = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (installed.status !== 0) process.exit(installed.status ?? 1);
}
const child = spawn(process.execPath, [require.resolve('tsx/cli', { paths: [root] }), path.join(root, 'src', 'bin', 'main.ts')], {
  cwd: root,
  stdio: 'inherit',
});
// Ctrl-C reaches the whole process group by itself; a SIGTERM sent to this process alone is passed on.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
