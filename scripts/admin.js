#!/usr/bin/env node
// `npm run admin`: the operator CLI (ops/bin/admin.ts). tsx transpiled its few hundred modules on every
// call (seconds per command); instead esbuild bundles our own code once into the git-ignored dist/ (about
// 0.2 s), again only when a source file is newer than the bundle, and plain Node runs it. Packages stay
// external: they load from node_modules as they are.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const bundle = path.join(root, 'dist', 'admin.js');
const SOURCE_DIRS = ['src', 'activities', 'workflows', 'ops'];

function newestSourceMs() {
  let newest = fs.statSync(path.join(root, 'package.json')).mtimeMs;
  const pending = SOURCE_DIRS.map((dir) => path.join(root, dir));
  while (pending.length > 0) {
    const dir = pending.pop();
    // A directory's own time moves when a file in it is added, removed or renamed.
    newest = Math.max(newest, fs.statSync(dir).mtimeMs);
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) pending.push(full);
      else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(full).mtimeMs);
    }
  }
  return newest;
}

function bundledMs() {
  return fs.statSync(bundle, { throwIfNoEntry: false })?.mtimeMs ?? 0;
}

if (bundledMs() < newestSourceMs()) {
  fs.mkdirSync(path.dirname(bundle), { recursive: true });
  // Written aside and renamed: two commands started together never run a half-written bundle.
  const partial = `${bundle}.${process.pid}.tmp`;
  require('esbuild').buildSync({
    entryPoints: [path.join(root, 'ops', 'bin', 'admin.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${process.versions.node.split('.')[0]}`,
    packages: 'external',
    outfile: partial,
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  fs.renameSync(partial, bundle);
}
require(bundle);
