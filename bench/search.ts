/**
 * Search bench (SPEC §18): a metadata filter over 1,000,000 intents against a lookup by primary key.
 *
 *   npm run bench -- search                      # 1,000,000 intents
 *   BENCH_SEARCH_INTENTS=100000 npx tsx bench/search.ts
 *
 * A scratch database migrated like the app's (test/support/scratch.ts) gets BENCH_SEARCH_INTENTS intents in
 * set-based generate_series inserts (progress per chunk), each with metadata
 * `{ order_id: order-<n>, customer: cust-<n mod 10,000>, channel }`, spread over 1,000 users, plus a second
 * organization holding the same metadata (so the organization check does real work), then VACUUM ANALYZE.
 * Measured through the API's own functions, so the SQL is exactly what the API runs:
 *  - floor: `SELECT 1` (one round trip, no work: on a loaded machine, most of every figure);
 *  - baseline: GET /intent/{id} (getIntent: the row by primary key, then its transactions);
 *  - GET /intent?metadata[order_id]=… (listIntents: one match; the page, then its transactions);
 *  - GET /intent?metadata[customer]=…&metadata[channel]=… (about 33 matches: a full page of 25).
 * BENCH_SEARCH_QUERIES (default 1,000) of each, interleaved, random keys, after a warm-up; medians and p95.
 * EXPLAIN (ANALYZE) of the filter's first statement, captured as it ran, must show the GIN index
 * (intents_metadata). Goals: filter p50 ≤ 5 ms and ≤ 2× the primary-key p50; the bench exits 1 otherwise.
 * Postgres: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres); the database is dropped at the end.
 */
import { createPool, type Queryable } from '../src/db/pool';
import { randomString } from '../src/ids';
import { getIntent, listIntents } from '../src/ledger/intents';
import type { IntentListQuery } from '../src/ledger/schemas';
import { createOrganization } from '../src/orgs/repo';
import { createScratchDatabase } from '../test/support/scratch';
import { writeResults } from './results';

const INTENTS = Number(process.env.BENCH_SEARCH_INTENTS ?? 1_000_000);
const QUERIES = Number(process.env.BENCH_SEARCH_QUERIES ?? 1_000);
const WARMUP_QUERIES = 100;
const CHUNK_ROWS = 100_000;
const USERS = 1_000;
const CUSTOMERS = 10_000;
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const GOAL_P50_MS = 5;
const GOAL_RATIO_MAX = 2;

const say = (line: string) => process.stdout.write(`${line}\n`);
const round = (value: number, digits = 3) => Number(value.toFixed(digits));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function summary(samplesMs: number[]): { p50_ms: number; p95_ms: number; mean_ms: number } {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return { p50_ms: round(percentile(sorted, 50)), p95_ms: round(percentile(sorted, 95)), mean_ms: round(mean) };
}

const intentId = (organization: number, n: number) => `intent_sandbox_bench${organization}${String(n).padStart(12, '0')}`;

/** Users and intents of one organization, set-based, in chunks so progress shows. */
async function fill(db: Queryable, input: { organizationId: string; accountId: string; organization: number; intents: number }) {
  const { organizationId, accountId, organization } = input;
  await db.query(
    `INSERT INTO users (id, organization_id, status, identity_verified, first_name, last_name, email, date_of_birth, address,
                        government_id_type, government_id_last4)
     SELECT 'user_bench' || $2::text || lpad(u::text, 12, '0'), $1, 'enabled', true, 'Bench', 'User', 'bench@example.com', '1990-01-01',
            '{"address_line_1":"1 Main St","locality":"Newark","administrative_area":"NJ","postal_code":"07102","country":"US"}',
            'passport', '1234'
       FROM generate_series(1, $3::int) u`,
    [organizationId, organization, USERS],
  );
  for (let from = 1; from <= input.intents; from += CHUNK_ROWS) {
    const to = Math.min(input.intents, from + CHUNK_ROWS - 1);
    await db.query(
      `INSERT INTO intents (id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode, status,
                            metadata, created_at, updated_at)
       SELECT 'intent_sandbox_bench' || $3::text || lpad(n::text, 12, '0'), $1, $2, 'user_bench' || $3::text || lpad((1 + n % $6)::text, 12, '0'),
              'k-' || n, 'cash_in', 100 + n % 10000, 'automatic', 'approved',
              jsonb_build_object('order_id', 'order-' || n, 'customer', 'cust-' || (n % $7), 'channel', (ARRAY['web', 'app', 'pos'])[1 + n % 3]),
              now() - n * interval '1 second', now() - n * interval '1 second'
         FROM generate_series($4::int, $5::int) n`,
      [organizationId, accountId, organization, from, to, USERS, CUSTOMERS],
    );
    say(`organization ${organization}: ${to.toLocaleString('en-US')} / ${input.intents.toLocaleString('en-US')} intents`);
  }
}

/** A Queryable that remembers every statement it runs, so the bench can EXPLAIN exactly what the API sent. */
function recording(db: Queryable): { db: Queryable; statements: Array<{ text: string; values: unknown[] }> } {
  const statements: Array<{ text: string; values: unknown[] }> = [];
  const query = (text: string, values: unknown[]) => {
    statements.push({ text, values });
    return db.query(text, values);
  };
  return { db: { query } as unknown as Queryable, statements };
}

async function explainFilter(db: Queryable, organizationId: string, query: IntentListQuery): Promise<string[]> {
  const recorder = recording(db);
  await listIntents(recorder.db, organizationId, query);
  const first = recorder.statements[0]!;
  const { rows } = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${first.text}`, first.values);
  return rows.map((row) => row['QUERY PLAN']);
}

interface Case {
  name: string;
  run: (n: number) => Promise<number>;
}

/** Runs every case `count` times, interleaved (so drift hits all alike), and returns each one's samples. */
async function measure(cases: Case[], count: number): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let i = 0; i < count; i += 1) {
    for (const c of cases) {
      const n = 1 + Math.floor(Math.random() * INTENTS);
      const started = process.hrtime.bigint();
      const found = await c.run(n);
      samples.get(c.name)!.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (found === 0) throw new Error(`${c.name} found nothing for n=${n}`);
    }
  }
  return samples;
}

async function main(): Promise<void> {
  const scratch = await createScratchDatabase(
    PG_BASE,
    `bench_search_${randomString(8)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`,
  );
  const pool = createPool(scratch.databaseUrl, 2);
  try {
    const started = Date.now();
    const orgs = [];
    for (const organization of [1, 2]) {
      const created = await createOrganization(pool, { name: `Bench ${organization}`, kycRequired: true, environment: 'sandbox' });
      orgs.push(created);
      await fill(pool, {
        organizationId: created.organization.id,
        accountId: created.account.id,
        organization,
        intents: organization === 1 ? INTENTS : Math.ceil(INTENTS / 10),
      });
    }
    // What autovacuum would have done by the time anyone searches: statistics, and the visibility map.
    await pool.query('VACUUM ANALYZE users, intents');
    const loadSeconds = (Date.now() - started) / 1000;
    say(`loaded in ${loadSeconds.toFixed(1)} s`);
    const organizationId = orgs[0]!.organization.id;
    const page = { limit: 25 };
    const cases: Case[] = [
      // The floor: one round trip that does no work, to tell the machine's load from the queries' cost.
      { name: 'select_1', run: async () => (await pool.query('SELECT 1')).rowCount ?? 0 },
      { name: 'primary_key', run: async (n) => ((await getIntent(pool, organizationId, intentId(1, n))) ? 1 : 0) },
      {
        name: 'metadata_order_id',
        run: async (n) => (await listIntents(pool, organizationId, { ...page, metadata: { order_id: `order-${n}` } })).data.length,
      },
      {
        name: 'metadata_customer_and_channel',
        run: async (n) =>
          (
            await listIntents(pool, organizationId, {
              ...page,
              metadata: { customer: `cust-${n % CUSTOMERS}`, channel: ['web', 'app', 'pos'][n % 3]! },
            })
          ).data.length,
      },
    ];
    await measure(cases, WARMUP_QUERIES);
    say(`measuring ${QUERIES} queries of each case, interleaved`);
    const samples = await measure(cases, QUERIES);
    const results = Object.fromEntries([...samples].map(([name, values]) => [name, summary(values)]));
    const plan = await explainFilter(pool, organizationId, { ...page, metadata: { order_id: `order-${Math.ceil(INTENTS / 2)}` } });
    const pagePlan = await explainFilter(pool, organizationId, { ...page, metadata: { customer: 'cust-42', channel: 'web' } });
    say('\nEXPLAIN (ANALYZE, BUFFERS) GET /intent?metadata[order_id]=…');
    for (const line of plan) say(`  ${line}`);
    say('\nEXPLAIN (ANALYZE, BUFFERS) GET /intent?metadata[customer]=…&metadata[channel]=…');
    for (const line of pagePlan) say(`  ${line}`);
    const executionMs = (lines: string[]) => Number(/Execution Time: ([\d.]+) ms/.exec(lines.join('\n'))?.[1]);
    const usesIndex = [plan, pagePlan].every((lines) => lines.some((line) => /Index Scan on intents_metadata/.test(line)));
    const filterP50 = results.metadata_order_id!.p50_ms;
    const baselineP50 = results.primary_key!.p50_ms;
    const ratio = round(filterP50 / baselineP50, 2);
    const goals = {
      filter_p50_at_most_5_ms: filterP50 <= GOAL_P50_MS,
      filter_at_most_2x_primary_key: ratio <= GOAL_RATIO_MAX,
      index_scan: usesIndex,
    };
    say('');
    for (const [name, result] of Object.entries(results))
      say(`${name.padEnd(30)} p50 ${result.p50_ms} ms  p95 ${result.p95_ms} ms  mean ${result.mean_ms} ms`);
    say(`EXPLAIN ANALYZE execution: order_id ${executionMs(plan)} ms, customer+channel ${executionMs(pagePlan)} ms`);
    say(`metadata filter / primary key (p50): ${ratio}×   goals: ${JSON.stringify(goals)}`);
    const file = writeResults('search', {
      intents: INTENTS,
      other_organization_intents: Math.ceil(INTENTS / 10),
      queries_per_case: QUERIES,
      load_seconds: round(loadSeconds, 1),
      results,
      ratio_p50: ratio,
      goals,
      explain_execution_ms: { order_id: executionMs(plan), customer_and_channel: executionMs(pagePlan) },
      plan,
      page_plan: pagePlan,
    });
    say(`results: ${file}`);
    if (!Object.values(goals).every(Boolean)) process.exitCode = 1;
  } finally {
    await pool.end();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
