// Builds dist/cjs (CommonJS) and dist/esm (ES modules), each with declarations, with tsc. Run by the root's
// `prepare` on every install of the workspace, and by this package's own `prepare` (an install from a clone
// or a git URL) and `prepack` (npm pack, npm publish), so the package never leaves without dist. An install
// without devDependencies (the Docker image's `npm ci --omit=dev`) has no tsc and builds nothing; a pack
// without tsc fails rather than make a tarball that cannot be imported.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
} catch {
  if (process.env.npm_lifecycle_event === 'prepack') throw new Error('@payments-ledger/sdk: typescript is needed to pack the package');
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
