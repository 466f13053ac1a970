#!/usr/bin/env node
// `npm start` and `npm run cluster` on a fresh clone: installs the npm packages when any is missing, then runs
// the whole service (ops/bin/main.ts, or ops/bin/cluster.ts for `cluster`) in this same process through tsx,
// so a signal to this process reaches the service directly. Plain Node until then: nothing is installed yet.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const wanted = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies });
const missing = wanted.filter((name) => !fs.existsSync(path.join(root, 'node_modules', name, 'package.json')));
if (missing.length > 0) {
  process.stdout.write(`Installing npm packages (missing: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''})...\n`);
  // Exactly the lock's versions; the lock lists every platform's optional packages, so `npm ci` accepts it.
  const installed = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (installed.status !== 0) process.exit(installed.status ?? 1);
}
// The operator console's page (console/dist): built by `npm ci`; built here when missing or older than its sources
// (a checkout after the install). A failed build leaves /console answering 503 and the API serving as ever.
const consoleBuilt = spawnSync(process.execPath, [path.join(root, 'console', 'scripts', 'build.js'), '--if-stale'], {
  cwd: root,
  stdio: 'inherit',
});
if (consoleBuilt.status !== 0)
  process.stdout.write('The operator console could not be built; /console answers 503 until `npm run console:build` succeeds.\n');
require(require.resolve('tsx/cjs/api', { paths: [root] })).register();
const entry = process.argv[2] === 'cluster' ? 'cluster.ts' : 'main.ts';
require(path.join(__dirname, entry));
