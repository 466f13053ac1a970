// Builds dist/cjs (CommonJS) and dist/esm (ES modules), each with declarations, with the workspace's tsc.
// Run by the root's `prepare` on every install, so a fresh clone's `npm ci` leaves the package importable. An
// install without devDependencies (the Docker image's `npm ci --omit=dev`) has no tsc and builds nothing.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
} catch {
  process.stdout.write('@payments-ledger/sdk: typescript is not installed (a production install); not built\n');
  return;
}
fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
for (const [config, type] of [
  ['tsconfig.json', 'commonjs'],
  ['tsconfig.esm.json', 'module'],
]) {
  execFileSync(process.execPath, [tsc, '-p', path.join(root, config)], { stdio: 'inherit' });
  const outDir = path.join(root, 'dist', type === 'module' ? 'esm' : 'cjs');
  fs.writeFileSync(path.join(outDir, 'package.json'), `${JSON.stringify({ type })}\n`);
}
