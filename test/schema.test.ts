import fs from 'node:fs';
import { dumpMigratedSchema, normalizeDump, SCHEMA_FILE } from './support/schemaDump';

describe('schema.sql', () => {
  test('equals the schema-only dump of a freshly migrated database', async () => {
    const committed = fs.readFileSync(SCHEMA_FILE, 'utf8');
    const migrated = await dumpMigratedSchema(process.env.LEDGER_TEST_ADMIN_URL);
    if (migrated !== committed) {
      throw new Error(
        'schema.sql is out of date with migrations/: run `npm run schema` and commit the result.\n' + firstDifference(committed, migrated),
      );
    }
    // Guards the comparison itself: an empty or noise-only dump would make any two runs equal.
    expect(migrated).toMatch(/CREATE TABLE public\.transactions \(/);
    expect(migrated).toMatch(/CREATE FUNCTION public\.edge_authenticate\(/);
    expect(migrated).not.toMatch(/pgmigrations|^\\restrict|^SET /m);
  });

  test('normalizing drops the lines that vary between pg_dump runs and versions', () => {
    const dump = [
      '--',
      '\\restrict abc123',
      '-- Dumped from database version 15.20',
      'SET lock_timeout = 0;',
      "SELECT pg_catalog.set_config('search_path', '', false);",
      '',
      '',
      '',
      'CREATE TABLE public.t (id integer);',
      '\\unrestrict abc123',
      '',
    ].join('\n');
    const normalized = normalizeDump(dump);
    expect(normalized).not.toMatch(/restrict|Dumped from|^SET |set_config|\n\n\n/m);
    expect(normalized.endsWith('--\n\nCREATE TABLE public.t (id integer);\n')).toBe(true);
  });
});

/** The first differing line of two texts, with its line number, so the failure says where to look. */
function firstDifference(expected: string, actual: string): string {
  const expectedLines = expected.split('\n');
  const actualLines = actual.split('\n');
  const index = expectedLines.findIndex((line, i) => line !== actualLines[i]);
  const at = index === -1 ? expectedLines.length : index;
  return `first difference at schema.sql line ${at + 1}:\n  committed: ${expectedLines[at] ?? '(end of file)'}\n  migrated:  ${actualLines[at] ?? '(end of file)'}`;
}
