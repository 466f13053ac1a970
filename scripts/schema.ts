/** `npm run schema`: regenerates schema.sql from a freshly migrated scratch database on the test Postgres. */
import fs from 'node:fs';
import { dumpMigratedSchema, SCHEMA_FILE } from '../test/support/schemaDump';

async function main(): Promise<void> {
  const schema = await dumpMigratedSchema();
  const previous = fs.existsSync(SCHEMA_FILE) ? fs.readFileSync(SCHEMA_FILE, 'utf8') : null;
  fs.writeFileSync(SCHEMA_FILE, schema);
  process.stdout.write(`${previous === schema ? 'unchanged' : 'wrote'} schema.sql (${schema.split('\n').length - 1} lines)\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
