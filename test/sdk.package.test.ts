import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { Ledger, resources } from '@payments-ledger/sdk';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');
const DOCUMENT = path.join(ROOT, 'sdk', 'src', 'generated', 'openapi.json');

/** Every operationId of the committed document (paths only: `webhooks` are what the service sends, not calls). */
function documentOperationIds(): string[] {
  const document = JSON.parse(readFileSync(DOCUMENT, 'utf8')) as { paths: Record<string, Record<string, { operationId: string }>> };
  return Object.values(document.paths).flatMap((operations) => Object.values(operations).map((operation) => operation.operationId));
}

describe('SPEC §22 SDK package', () => {
  test('the committed generated files are what npm run sdk:generate writes from the code as it is now', async () => {
    const result = await run(
      process.execPath,
      [path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'scripts/sdk-generate.ts', '--check'],
      {
        cwd: ROOT,
      },
    ).catch((error: { code: number; stderr: string }) => error);
    expect('stderr' in result ? result.stderr : '').toBe('');
  });

  test('every operation of the document has exactly one typed method, and every method is a function of the client', () => {
    const ids = documentOperationIds();
    expect(ids.length).toBeGreaterThan(40);
    const ledger = new Ledger({ apiKey: 'sk_sandbox_x', baseUrl: 'http://127.0.0.1:1' }) as unknown as Record<
      string,
      Record<string, unknown>
    >;
    const covered = Object.entries(resources).flatMap(([resource, methods]) =>
      Object.entries(methods).map(([method, operationId]) => {
        expect(typeof ledger[resource]![method]).toBe('function');
        return operationId;
      }),
    );
    expect([...covered].sort()).toEqual([...ids].sort());
  });

  test('the built package loads from a plain Node script, as CommonJS and as an ES module', async () => {
    const script = (load: string) => `${load}; const l = new Ledger({ apiKey: 'k', baseUrl: 'http://x' });
      if (typeof l.transactions.list !== 'function' || typeof l.webhooks.verify !== 'function' || typeof LedgerError !== 'function') process.exit(1);
      console.log('ok');`;
    const cjs = await run(process.execPath, ['-e', script("const { Ledger, LedgerError } = require('@payments-ledger/sdk')")], {
      cwd: ROOT,
    });
    expect(cjs.stdout.trim()).toBe('ok');
    const esm = await run(
      process.execPath,
      ['--input-type=module', '-e', script("import { Ledger, LedgerError } from '@payments-ledger/sdk'")],
      {
        cwd: ROOT,
      },
    );
    expect(esm.stdout.trim()).toBe('ok');
  });

  test('tsc rejects a call that passes a wrong field type, and accepts the same call with the right one', () => {
    const diagnosticsOf = (file: string) => {
      const program = ts.createProgram([path.join(ROOT, 'test', 'fixtures', 'sdk', file)], {
        noEmit: true,
        strict: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.Node16,
        moduleResolution: ts.ModuleResolutionKind.Node16,
        types: ['node'],
        skipLibCheck: true,
        paths: { '@payments-ledger/sdk': [path.join(ROOT, 'sdk', 'src', 'index.ts')] },
      });
      return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    };
    expect(diagnosticsOf('rightFieldType.ts')).toEqual([]);
    const wrong = diagnosticsOf('wrongFieldType.ts');
    expect(wrong).toHaveLength(1);
    expect(wrong[0]).toMatch(/Type 'string' is not assignable to type 'number'/);
  });
});
