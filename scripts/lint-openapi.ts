/**
 * Lints the OpenAPI document the API serves, generated exactly as /openapi.json is (both environments'
 * route sets), with Redocly's recommended rules and Spectral's OpenAPI ruleset. Offline: built-in
 * rulesets only, Redocly's telemetry and update check off. Exits non-zero on any error.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildOpenApiDocument } from '../src/http/openapi';
import { allRoutes, registerFeatureDocs } from '../src/routes';

const root = path.resolve(__dirname, '..');
const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);
const dir = mkdtempSync(path.join(tmpdir(), 'ledger-openapi-'));
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_UPDATE_NOTIFIER: '1' };
let failed = false;
try {
  for (const environment of ['sandbox', 'production']) {
    const file = path.join(dir, `openapi.${environment}.json`);
    writeFileSync(file, `${JSON.stringify(buildOpenApiDocument(allRoutes, environment, registerFeatureDocs), null, 2)}\n`);
    const runs: [string, string[]][] = [
      [bin('redocly'), ['lint', '--config', path.join(root, 'redocly.yaml'), file]],
      [bin('spectral'), ['lint', '--ruleset', path.join(root, '.spectral.yaml'), '--fail-severity', 'error', file]],
    ];
    for (const [command, args] of runs) {
      process.stdout.write(`\n== ${path.basename(command)} ${environment}\n`);
      const result = spawnSync(command, args, { cwd: root, env, stdio: 'inherit' });
      if (result.status !== 0) failed = true;
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
