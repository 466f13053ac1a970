/**
 * `npm run contract:record [-- test/x.test.ts …]`: runs the existing suites (those on an in-process stack but the
 * contract suite, or the ones named) one at a time with LEDGER_RECORD_REQUESTS set, so every in-process stack writes down the requests
 * it accepted (test/support/requestRecorder.ts), then writes them to test/fixtures/accepted-requests.jsonl:
 * each with the document's route template, de-duplicated, at most PER_SHAPE of one shape (method, route, the
 * query's names and the body's structure), and none carrying an API key or a webhook secret. The contract suite
 * holds every line to the current document (issue 36: tightening the document refuses nothing the service
 * accepted). `--from <raw.jsonl>` skips the run and rewrites the fixture from an earlier recording.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildOpenApiDocument } from '../src/http/openapi';
import { allRoutes, registerFeatureDocs } from '../src/routes';
import type { RecordedRequest } from '../test/support/requestRecorder';

const ROOT = path.resolve(__dirname, '..');
const FIXTURE = path.join(ROOT, 'test', 'fixtures', 'accepted-requests.jsonl');
/** Suites left out by default: the contract suite sends what it generates from the document itself. */
const NOT_RECORDED = new Set(['contract.test.ts']);
/** Requests of one shape kept: enough to vary the values, few enough for a fixture a reviewer can read. */
const PER_SHAPE = 20;
/** Paths of the app that are not API operations: the console's files and the API reference's assets. */
const NOT_API = /^\/(console(\/|$)|docs\/)/;
const SECRET = /sk_(sandbox|production)_|whsec_/;

interface Line extends RecordedRequest {
  route: string | null;
}

function record(suites: string[]): string {
  const raw = path.join(mkdtempSync(path.join(tmpdir(), 'accepted-requests-')), 'raw.jsonl');
  writeFileSync(raw, '');
  const jest = path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');
  const run = spawnSync(process.execPath, [jest, '--maxWorkers=1', ...suites], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, LEDGER_RECORD_REQUESTS: raw },
  });
  if (run.status !== 0) console.warn(`jest exited ${run.status}: the requests its suites sent before failing are recorded too`);
  console.log(`raw recording: ${raw}`);
  return raw;
}

/** The document's path templates, each with the pattern of the paths it names; literal segments win over parameters. */
function templates(): { route: string; pattern: RegExp }[] {
  const document = buildOpenApiDocument(allRoutes, 'sandbox', registerFeatureDocs) as { paths: Record<string, unknown> };
  return Object.keys(document.paths)
    .map((route) => ({
      route,
      params: (route.match(/\{/g) ?? []).length,
      pattern: new RegExp(`^${route.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`),
    }))
    .sort((a, b) => a.params - b.params);
}

/** The structure of a value: its keys and their kinds, never the values themselves. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return [...new Set(value.map((item) => JSON.stringify(shape(item))))].sort();
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, shape((value as Record<string, unknown>)[key])]),
    );
  return value === null ? 'null' : typeof value;
}

/**
 * A batch as the service accepted it item by item (SPEC §19: a 200 batch can hold items answered 400): only the
 * items answered 2xx, or null when none was; any other request as recorded.
 */
function acceptedItems(request: RecordedRequest): RecordedRequest | null {
  const { item_statuses: statuses, ...rest } = request;
  const body = rest.body as { intents?: unknown[] } | undefined;
  if (statuses === undefined || !Array.isArray(body?.intents)) return rest;
  const intents = body.intents.filter((_, index) => (statuses[index] ?? 0) >= 200 && (statuses[index] ?? 0) <= 299);
  return intents.length === 0 ? null : { ...rest, body: { ...body, intents } };
}

function fixtureLines(raw: string): Line[] {
  const routes = templates();
  const seen = new Set<string>();
  const perShape = new Map<string, number>();
  const lines: Line[] = [];
  let secrets = 0;
  for (const text of readFileSync(raw, 'utf8').split('\n')) {
    if (!text.trim()) continue;
    if (SECRET.test(text)) {
      secrets += 1;
      continue;
    }
    const request = acceptedItems(JSON.parse(text) as RecordedRequest);
    if (request === null || NOT_API.test(request.path)) continue;
    const route = routes.find((candidate) => candidate.pattern.test(request.path))?.route ?? null;
    const queryNames = [...new URLSearchParams(request.query).keys()].sort();
    const key = JSON.stringify([request.method, route ?? request.path, request.query, request.body]);
    const shapeKey = JSON.stringify([request.method, route ?? request.path, queryNames, shape(request.body)]);
    if (seen.has(key) || (perShape.get(shapeKey) ?? 0) >= PER_SHAPE) continue;
    seen.add(key);
    perShape.set(shapeKey, (perShape.get(shapeKey) ?? 0) + 1);
    lines.push({ ...request, route });
  }
  if (secrets > 0) console.log(`${secrets} requests left out: they carry an API key or a webhook secret`);
  return lines.sort((a, b) => `${a.route ?? a.path} ${a.method} ${a.suite}`.localeCompare(`${b.route ?? b.path} ${b.method} ${b.suite}`));
}

function main(): void {
  const args = process.argv.slice(2);
  const from = args[0] === '--from' ? args[1] : undefined;
  const suites = from
    ? []
    : args.length > 0
      ? args
      : readdirSync(path.join(ROOT, 'test'))
          .filter((name) => name.endsWith('.test.ts') && !name.includes('.cluster.') && !NOT_RECORDED.has(name))
          // Only an in-process stack records (startStack); suites without one would run for nothing.
          .filter((name) => readFileSync(path.join(ROOT, 'test', name), 'utf8').includes('startStack('))
          .map((name) => `test/${name}`);
  const raw = from ?? record(suites);
  if (!existsSync(raw)) throw new Error(`no recording at ${raw}`);
  const lines = fixtureLines(raw);
  writeFileSync(FIXTURE, lines.map(({ route, ...request }) => JSON.stringify({ route, ...request })).join('\n') + '\n');
  const operations = new Set(lines.map((line) => `${line.method} ${line.route}`));
  console.log(`${path.relative(ROOT, FIXTURE)}: ${lines.length} requests over ${operations.size} operations`);
}

main();
