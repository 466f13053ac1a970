/**
 * `npm run bench -- achReturns` (SPEC §25 goals), each figure beside its baseline in the same run:
 * - apply: a return file of BENCH_RETURNS_ENTRIES (10,000) entries, written by moov-io/ach (achcli
 *   -reformat=ach from its JSON), ingested and applied by ingestInboundFile (src/ach/inbound.ts: parse, match by
 *   trace number, disputes with their transactions, per-code rules, events, one database transaction) against
 *   achcli reading and validating the same file (`achcli -reformat=json`). Each round has its own 10,000
 *   production deposits (users, bank accounts, intents, transactions written set-based; their debits filed by
 *   the real buildWindowFile and delivered), so every round applies every return for the first time.
 *   Medians of BENCH_RETURNS_RUNS (3); goal ≤ 2×.
 * - rates: GET /ach/return_rates's read (returnRates, src/ach/returnRates.ts) for an organization with
 *   BENCH_RATES_DEBITS (1,000,000) debit entries over 60 days, 2 % of them returned, against a primary-key
 *   lookup of one ach_entries row, interleaved, BENCH_RATES_READS (500) each; goal p50 ≤ 10 ms. Beside them,
 *   the same rates computed by scanning the entries (what the kept counts replace), a few times.
 *   The 1,000,000 rows are seeded with generate_series under session_replication_role = replica (no foreign
 *   keys to 1,000,000 transactions, no per-row triggers); their day counts are then computed by the same
 *   statement as migrations/0042's backfill, so the endpoint reads what the triggers would have kept.
 * Postgres at BENCH_DATABASE_URL, in a scratch database dropped at the end; no Temporal (applying a file
 * queues its workflow starts in the database, as the api does).
 *   BENCH_RETURNS_ENTRIES=10000 BENCH_RETURNS_RUNS=3 npx tsx bench/achReturns.ts
 */
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureAchcli } from '../ops/goTools';
import { buildWindowFile, markFileDelivered } from '../src/ach/files';
import { ingestInboundFile } from '../src/ach/inbound';
import { returnRates } from '../src/ach/returnRates';
import { accountFingerprint, sealAccountNumber } from '../src/bankAccounts/sealing';
import { loadConfig, type Config } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { createLogger } from '../src/logger';
import { createOrganization } from '../src/orgs/repo';
import { createScratchDatabase } from '../test/support/scratch';
import { writeResults } from './results';

const ENTRIES = Number(process.env.BENCH_RETURNS_ENTRIES ?? 10_000);
const RUNS = Math.max(3, Number(process.env.BENCH_RETURNS_RUNS ?? 3));
const RATE_DEBITS = Number(process.env.BENCH_RATES_DEBITS ?? 1_000_000);
const RATE_READS = Number(process.env.BENCH_RATES_READS ?? 500);
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ODFI = '091000019';
const RDFI = '110000000';

const say = (line: string) => process.stdout.write(`${line}\n`);
const round = (value: number, digits = 1) => Number(value.toFixed(digits));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

async function timed<T>(work: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const started = process.hrtime.bigint();
  const value = await work();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, value };
}

/** A production organization with its ACH company, ready to originate. */
async function benchOrganization(pool: Pool, name: string) {
  const created = await createOrganization(pool, { name, kycRequired: false, environment: 'production' });
  await pool.query(
    `INSERT INTO organization_ach (organization_id, company_id, company_name, updated_at) VALUES ($1, '1234567890', 'BENCH COMPANY', now())`,
    [created.organization.id],
  );
  return { organizationId: created.organization.id, accountId: created.account.id };
}

interface Deposit {
  trace: string;
  number: string;
  amount: number;
}

/**
 * `count` production deposits of `count` new users, each from its own bank account, written set-based (the
 * transactions' own triggers queue their PPD debits and journal entries), then filed by buildWindowFile and
 * delivered. Answers each filed debit's trace number, account number and amount.
 */
async function seedDeposits(pool: Pool, config: Config, org: { organizationId: string; accountId: string }, tag: string, count: number) {
  const ids = Array.from({ length: count }, (_, i) => `${tag}${String(i).padStart(10, '0')}`);
  const numbers = ids.map((_, i) => `8${String(i).padStart(9, '0')}${tag.length}`);
  await pool.query(
    `INSERT INTO users (id, organization_id, status, identity_verified, first_name, last_name, email, date_of_birth, address, government_id_type, government_id_last4)
     SELECT 'user_bench' || s, $1, 'enabled', true, 'Bench', 'User', 'bench@example.com', '1990-01-01', '{}', 'passport', '1234' FROM unnest($2::text[]) s`,
    [org.organizationId, ids],
  );
  await pool.query(
    `INSERT INTO bank_accounts (id, organization_id, user_id, routing_number, bank_name, last4, account_type, account_number_sealed, account_fingerprint, created_at, updated_at)
     SELECT 'ba_bench' || s, $1, 'user_bench' || s, $2, 'Bench Bank', right(n, 4), 'checking', sealed, fp, now(), now()
       FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS u (s, n, sealed, fp)`,
    [
      org.organizationId,
      RDFI,
      ids,
      numbers,
      ids.map((s, i) => sealAccountNumber(config, numbers[i]!, { table: 'bank_accounts', id: `ba_bench${s}` })),
      numbers.map((n) => accountFingerprint(config, RDFI, n)),
    ],
  );
  await pool.query(
    `INSERT INTO intents (id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode, status, created_at, updated_at, bank_account_id)
     SELECT 'intent_production_bench' || s, $1, $2, 'user_bench' || s, 'k' || s, 'cash_in', 100 + ord, 'automatic', 'approved', now(), now(), 'ba_bench' || s
       FROM unnest($3::text[]) WITH ORDINALITY AS u (s, ord)`,
    [org.organizationId, org.accountId, ids],
  );
  await pool.query(
    `INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at)
     SELECT 'txn_bench' || s, $1, $2, 'cash_in', 'intent', 'intent_production_bench' || s, 100 + ord, 'pending', current_date, now(), now()
       FROM unnest($3::text[]) WITH ORDINALITY AS u (s, ord)`,
    [org.organizationId, org.accountId, ids],
  );
  const built = await buildWindowFile(pool, config, createLogger('silent'), `bench-${tag}`, new Date());
  if (!built) throw new Error('the window built no file');
  await markFileDelivered(pool, built.fileId, new Date());
  const { rows } = await pool.query<{ trace_number: string; amount: number; id: string }>(
    `SELECT e.trace_number, e.amount_cents::int AS amount, t.source_id AS id FROM ach_entries e JOIN transactions t ON t.id = e.transaction_id
      WHERE e.file_id = $1 ORDER BY e.trace_number`,
    [built.fileId],
  );
  if (rows.length !== count) throw new Error(`filed ${rows.length} debits, expected ${count}`);
  const numberOf = new Map(ids.map((s, i) => [`intent_production_bench${s}`, numbers[i]!]));
  return rows.map((row): Deposit => ({ trace: row.trace_number, amount: row.amount, number: numberOf.get(row.id)! }));
}

/** The bank's return file of `deposits`, written by moov-io/ach: mostly R01, with R03 (disable) and R10 (suspend) among them. */
function returnFile(achcli: string, dir: string, deposits: Deposit[], run: number): Buffer {
  const code = (i: number) => (i % 25 === 0 ? 'R03' : i % 33 === 0 ? 'R10' : 'R01');
  const json = {
    fileHeader: {
      immediateDestination: ODFI,
      immediateOrigin: '021000021',
      fileCreationDate: '261130',
      fileCreationTime: String(1000 + run).slice(-4),
      fileIDModifier: 'A',
      immediateDestinationName: 'BENCH ODFI',
      immediateOriginName: 'FEDERAL RESERVE BANK',
    },
    batches: [
      {
        batchHeader: {
          serviceClassCode: 225,
          companyName: 'BENCH COMPANY',
          companyIdentification: '1234567890',
          standardEntryClassCode: 'PPD',
          companyEntryDescription: 'PAYMENT',
          effectiveEntryDate: '261130',
          originatorStatusCode: 1,
          ODFIIdentification: '11000000',
          batchNumber: 1,
        },
        entryDetails: deposits.map((deposit, i) => {
          const traceNumber = `02100002${String(i + 1).padStart(7, '0')}`;
          return {
            transactionCode: 26,
            RDFIIdentification: ODFI.slice(0, 8),
            checkDigit: ODFI[8],
            DFIAccountNumber: deposit.number,
            amount: deposit.amount,
            identificationNumber: 'RETURN',
            individualName: 'BENCH USER',
            addendaRecordIndicator: 1,
            traceNumber,
            category: 'Return',
            addenda99: {
              typeCode: '99',
              returnCode: code(i),
              originalTrace: deposit.trace,
              dateOfDeath: '',
              originalDFI: '11000000',
              addendaInformation: '',
              traceNumber,
            },
          };
        }),
        batchControl: { serviceClassCode: 225 },
      },
    ],
    fileControl: {},
  };
  const jsonFile = path.join(dir, `returns-${run}.json`);
  fs.writeFileSync(jsonFile, JSON.stringify(json));
  const written = spawnSync(achcli, ['-reformat=ach', jsonFile], { maxBuffer: 1 << 30 });
  if (written.status !== 0) throw new Error(`achcli could not write the return file: ${String(written.stderr)}`);
  return written.stdout;
}

async function apply(pool: Pool, config: Config, dir: string) {
  const achcli = await ensureAchcli();
  const org = await benchOrganization(pool, 'Returns bench');
  const deps = { config, pool, log: createLogger('silent'), services: { taskQueue: 'bench-returns' } };
  const ingests: number[] = [];
  const achclis: number[] = [];
  for (let run = 0; run < RUNS; run += 1) {
    const seeded = await timed(() => seedDeposits(pool, config, org, `r${run}x`, ENTRIES));
    const bytes = returnFile(achcli, dir, seeded.value, run);
    const file = path.join(dir, `returns-${run}.ach`);
    fs.writeFileSync(file, bytes);
    await pool.query('ANALYZE');
    const read = await timed(() => spawnSync(achcli, ['-reformat=json', file], { maxBuffer: 1 << 30 }));
    if (read.value.status !== 0) throw new Error(`achcli refused the return file: ${String(read.value.stderr)}`);
    achclis.push(read.ms);
    const ingested = await timed(() => ingestInboundFile(deps, { fileName: `returns-${run}.ach`, bytes, source: 'cli', now: new Date() }));
    const summary = ingested.value.file;
    if (summary.returns_count !== ENTRIES || summary.exceptions_count !== 0)
      throw new Error(`round ${run}: ${summary.returns_count} returns applied, ${summary.exceptions_count} exceptions`);
    ingests.push(ingested.ms);
    say(
      `  run ${run + 1}: seeded and filed ${ENTRIES} deposits in ${round(seeded.ms / 1000)} s; ingest+apply ${round(ingested.ms)} ms, achcli -reformat=json ${round(read.ms)} ms`,
    );
  }
  const { rows } = await pool.query<{ disputes: number; suspended: number; disabled: number }>(
    `SELECT (SELECT count(*)::int FROM disputes WHERE organization_id = $1) AS disputes,
            (SELECT count(*)::int FROM users WHERE organization_id = $1 AND status = 'suspended') AS suspended,
            (SELECT count(*)::int FROM bank_accounts WHERE organization_id = $1 AND status = 'disabled') AS disabled`,
    [org.organizationId],
  );
  return {
    entries: ENTRIES,
    ingest_apply_ms: round(median(ingests)),
    achcli_read_validate_ms: round(median(achclis)),
    ingest_vs_achcli: round(median(ingests) / median(achclis), 2),
    goal_ingest_vs_achcli_max: 2,
    per_entry_ms: round(median(ingests) / ENTRIES, 3),
    applied: rows[0],
    runs: { ingest_apply_ms: ingests.map((ms) => round(ms)), achcli_ms: achclis.map((ms) => round(ms)) },
  };
}

/** 1,000,000 debit entries of one organization over the last 60 days (one transaction id each, never read), 2 % returned. */
async function seedRates(pool: Pool, count: number) {
  const org = await benchOrganization(pool, 'Return rates bench');
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL session_replication_role = replica');
    await client.query(
      `INSERT INTO ach_entries (organization_id, account_id, environment, transaction_id, bank_account_id, sec_code, transaction_code, amount_cents,
                                trace_number, status, file_id, effective_date, created_at, updated_at, settled_at)
       SELECT $1, $2, 'production', 'txn_rates' || lpad(g::text, 12, '0'), 'ba_rates', 'PPD', 27, 100 + g % 1000,
              '0910000' || lpad(g::text, 8, '0'), CASE WHEN g % 50 = 0 THEN 'returned' ELSE 'settled' END, 'achf_rates', current_date,
              now() - (g % 60) * interval '1 day', now(), now()
         FROM generate_series(1, $3::int) g`,
      [org.organizationId, org.accountId, count],
    );
    await client.query(
      `INSERT INTO ach_entry_returns (entry_id, organization_id, inbound_file_id, addenda_type, code, return_trace, created_at)
       SELECT id, organization_id, 'achi_rates', '99', CASE WHEN right(trace_number, 3)::int % 7 = 0 THEN 'R10' WHEN right(trace_number, 3)::int % 5 = 0 THEN 'R03' ELSE 'R01' END,
              trace_number, now()
         FROM ach_entries WHERE organization_id = $1 AND status = 'returned'`,
      [org.organizationId],
    );
    // The day counts, by migrations/0042's statements (its backfill, and its trigger's categories), for this
    // organization, spread over 0048's 16 slots as many writers fill them.
    await client.query(
      `INSERT INTO ach_return_counts (organization_id, day, slot, debits, returned, unauthorized, administrative)
       SELECT e.organization_id, (e.created_at AT TIME ZONE 'UTC')::date, (hashtext(e.id) & 15)::smallint, count(*), count(r.id),
              count(r.id) FILTER (WHERE r.code IN ('R05', 'R07', 'R10', 'R11', 'R29', 'R51')), count(r.id) FILTER (WHERE r.code IN ('R02', 'R03', 'R04'))
         FROM ach_entries e LEFT JOIN ach_entry_returns r ON r.entry_id = e.id AND r.addenda_type = '99'
        WHERE e.organization_id = $1 AND e.transaction_code IN (27, 37) GROUP BY 1, 2, 3`,
      [org.organizationId],
    );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
  await pool.query('VACUUM ANALYZE ach_entries');
  await pool.query('VACUUM ANALYZE ach_entry_returns');
  await pool.query('VACUUM ANALYZE ach_return_counts');
  return org;
}

async function rates(pool: Pool) {
  const seeded = await timed(() => seedRates(pool, RATE_DEBITS));
  say(`  seeded ${RATE_DEBITS} debit entries over 60 days in ${round(seeded.ms / 1000)} s`);
  const org = seeded.value;
  const { rows: ids } = await pool.query<{ id: string }>('SELECT id FROM ach_entries WHERE organization_id = $1 LIMIT 1000', [
    org.organizationId,
  ]);
  const pk = (i: number) => pool.query('SELECT * FROM ach_entries WHERE id = $1', [ids[i % ids.length]!.id]);
  for (let i = 0; i < 20; i += 1) {
    await returnRates(pool, org.organizationId);
    await pk(i);
  }
  const rateMs: number[] = [];
  const pkMs: number[] = [];
  for (let i = 0; i < RATE_READS; i += 1) {
    rateMs.push((await timed(() => returnRates(pool, org.organizationId))).ms);
    pkMs.push((await timed(() => pk(i))).ms);
  }
  const answer = await returnRates(pool, org.organizationId);
  const scanMs: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const scan = await timed(() =>
      pool.query(
        `SELECT count(*) AS debits, count(r.id) AS overall FROM ach_entries e LEFT JOIN ach_entry_returns r ON r.entry_id = e.id AND r.addenda_type = '99'
          WHERE e.organization_id = $1 AND e.transaction_code IN (27, 37) AND e.created_at > now() - interval '60 days'`,
        [org.organizationId],
      ),
    );
    scanMs.push(scan.ms);
    if (Number(scan.value.rows[0].overall) !== answer.overall.count) throw new Error('the kept counts differ from the scan');
  }
  return {
    debits: answer.debits,
    returned: answer.overall.count,
    return_rates_p50_ms: round(percentile(rateMs, 0.5), 3),
    return_rates_p99_ms: round(percentile(rateMs, 0.99), 3),
    primary_key_p50_ms: round(percentile(pkMs, 0.5), 3),
    primary_key_p99_ms: round(percentile(pkMs, 0.99), 3),
    rates_vs_primary_key: round(percentile(rateMs, 0.5) / percentile(pkMs, 0.5), 2),
    goal_return_rates_p50_ms_max: 10,
    scan_of_entries_median_ms: round(median(scanMs)),
    reads: RATE_READS,
  };
}

async function main(): Promise<void> {
  const database = `bench_returns_${Date.now()}_${process.pid}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-returns-'));
  say(`achReturns bench: ${ENTRIES}-entry return files x ${RUNS}, ${RATE_DEBITS} debits for the rates; scratch database ${database}`);
  const env = {
    LEDGER_ENVIRONMENT: 'production',
    BANK_DATA_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    ACH_ODFI_ROUTING: ODFI,
    ACH_IMMEDIATE_ORIGIN: ' 123456789',
    ACH_ODFI_NAME: 'BENCH ODFI',
    ACH_ORIGIN_NAME: 'PAYMENTS LEDGER BENCH',
    LOG_LEVEL: 'silent',
  };
  loadConfig(env); // a bad setting stops the bench before it makes a database
  const scratch = await createScratchDatabase(PG_BASE, database);
  const config = loadConfig({ ...env, DATABASE_URL: scratch.databaseUrl });
  const pool = createPool(scratch.databaseUrl, 4);
  try {
    say(`Applying a ${ENTRIES}-entry return file ${RUNS} times beside achcli reading and validating it...`);
    const applied = await apply(pool, config, dir);
    say(`Reading return rates over ${RATE_DEBITS} debits beside a primary-key lookup...`);
    const read = await rates(pool);
    const result = { bench: 'achReturns', cpus: os.cpus().length, apply: applied, rates: read };
    const written = writeResults('achReturns', result);
    say(JSON.stringify(result, null, 2));
    say(`Results: ${written}`);
  } finally {
    await pool.end();
    await scratch.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
