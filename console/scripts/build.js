// Builds the operator console (console/ → console/dist) with Vite. Run by the root's `prepare` on every install,
// by `npm run console:build`, and, when the built page is missing or older than its sources, by `npm start` and
// the console's tests (`node console/scripts/build.js --if-stale`). An install without devDependencies (the
// Docker image's `npm ci --omit=dev`) has no Vite and builds nothing; the api then answers /console with 503.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const dist = path.join(root, 'dist');
const stamp = path.join(dist, 'index.html');
const sources = [
  path.join(root, 'src'),
  path.join(root, 'index.html'),
  path.join(root, 'vite.config.mjs'),
  path.join(root, '..', 'sdk', 'src'),
];

function newest(file) {
  const stat = fs.statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...fs.readdirSync(file).map((name) => newest(path.join(file, name))));
}

/** True when dist/index.html is missing or older than any source of the page (its own or the SDK's). */
function stale() {
  if (!fs.existsSync(stamp)) return true;
  const built = fs.statSync(stamp).mtimeMs;
  return sources.some((source) => fs.existsSync(source) && newest(source) > built);
}

async function main() {
  if (process.argv.includes('--if-stale') && !stale()) return;
  let vite;
  try {
    require.resolve('vite', { paths: [root] });
    vite = await import('vite');
  } catch {
    process.stdout.write('console: vite is not installed (a production install); not built\n');
    return;
  }
  await vite.build({ configFile: path.join(root, 'vite.config.mjs') });
  process.stdout.write(`console: built into ${path.relative(process.cwd(), dist) || dist}\n`);
}

if (require.main === module) {
  main().catch((error) => {
    process.stderr.write(`console: build failed: ${error.stack ?? error}\n`);
    process.exit(1);
  });
}

module.exports = { stale };
