// `prepack`: builds dist, then takes `prepare` out of the manifest the tarball carries; `postpack` puts it
// back. A tarball already holds dist, so its `prepare` would never run, yet npm ≥ 11 warns about every
// dependency with one ("install scripts not yet covered by allowScripts"). The clone keeps `prepare` for
// installs from git and the workspace. The manifest is restored from a copy kept beside it, so a pack
// that died midway is mended by the next.
const fs = require('node:fs');
const path = require('node:path');

const manifest = path.resolve(__dirname, '..', 'package.json');
const kept = `${manifest}.prepack`;

if (process.argv[2] === 'restore') {
  if (fs.existsSync(kept)) fs.renameSync(kept, manifest);
} else {
  if (fs.existsSync(kept)) fs.renameSync(kept, manifest);
  require('./build.js');
  const text = fs.readFileSync(manifest, 'utf8');
  const packed = JSON.parse(text);
  delete packed.scripts.prepare;
  fs.writeFileSync(kept, text);
  fs.writeFileSync(manifest, `${JSON.stringify(packed, null, 2)}\n`);
}
