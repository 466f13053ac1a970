/**
 * Balance at an instant (SPEC §21). Run: `npm run bench -- balances` or `npx tsx bench/balances.ts`; Postgres at
 * BENCH_DATABASE_URL, in a scratch database of its own that is dropped at the end.
 *
 * Seeds one account with BENCH_BALANCES_ENTRIES (1,000,000) journal entries over a year with a snapshot at every
 * day's end (bench/journalSeed.ts), then reads its balances at BENCH_BALANCES_READS (500) random instants of
 * that year through balancesAt (GET /account/{id}/balances?at=: the last snapshot plus at most a day of
 * entries). Beside it, the baseline the snapshots replace: the same sums over every entry before the instant,
 * BENCH_BALANCES_FULL_READS (20) times, and a bare `SELECT 1` round trip as the floor of any read on the
 * machine. Goal: p50 ≤ 10 ms. Medians to stdout and bench/results/balances-*.json.
 */
import { createPool } from '../src/db/pool';
import { balancesAt } from '../src/journal/repo';
import { createScratchDatabase } from '../test/support/scratch';
import { SEED_END, seedJournal } from './journalSeed';
import { writeResults } from './results';

const ENTRIES = Number(process.env.BENCH_BALANCES_ENTRIES ?? 1_000_000);
const READS = Number(process.env.BENCH_BALANCES_READS ?? 500);
const FULL_READS = Number(process.env.BENCH_BALANCES_FULL_READS ?? 20);
const DAYS = 365;
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const say = (line: string) => process.stdout.write(`${line}\n`);
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const round = (value: number) => Number(value.toFixed(2));

async function main(): Promise<void> {
  const database = `bench_balances_${Date.now()}_${process.pid}`;
  say(`balances bench: ${ENTRIES} entries, ${READS} reads; scratch database ${database}`);
  const scratch = await createScratchDatabase(PG_BASE, database);
  const pool = createPool(scratch.databaseUrl, 2);
  try {
    const { accountId } = await seedJournal(pool, { entries: ENTRIES, days: DAYS, say });
    const instant = () => new Date(SEED_END.getTime() - Math.random() * DAYS * 86_400_000);
    const timed = async (read: () => Promise<unknown>) => {
      const started = process.hrtime.bigint();
      await read();
      return Number(process.hrtime.bigint() - started) / 1e6;
    };
    for (let i = 0; i < 20; i += 1) await balancesAt(pool, accountId, instant()); // warm plans and caches
    const snapshotMs: number[] = [];
    for (let i = 0; i < READS; i += 1) snapshotMs.push(await timed(() => balancesAt(pool, accountId, instant())));
    // The floor under any read on this machine: a round trip that does no work, interleaved the same way.
    const floorMs: number[] = [];
    for (let i = 0; i < READS; i += 1) floorMs.push(await timed(() => pool.query('SELECT 1')));
    const fullMs: number[] = [];
    for (let i = 0; i < FULL_READS; i += 1) {
      fullMs.push(
        await timed(() =>
          pool.query(
            `SELECT sum(journal_bucket_cents('pending', from_bucket, to_bucket, amount_cents)), sum(journal_bucket_cents('available', from_bucket, to_bucket, amount_cents)),
                    sum(journal_bucket_cents('in_transfer', from_bucket, to_bucket, amount_cents)) FROM journal_entries WHERE account_id = $1 AND created_at < $2`,
            [accountId, instant()],
          ),
        ),
      );
    }
    // Read at a snapshot's instant and between two, both ways: the snapshot path must be exact.
    const checkAt = new Date(SEED_END.getTime() - 100.5 * 86_400_000);
    const { rows } = await pool.query(
      `SELECT json_build_object('pending', sum(journal_bucket_cents('pending', from_bucket, to_bucket, amount_cents)),
                                'available', sum(journal_bucket_cents('available', from_bucket, to_bucket, amount_cents)),
                                'in_transfer', coalesce(sum(journal_bucket_cents('in_transfer', from_bucket, to_bucket, amount_cents)), 0)) AS b
         FROM journal_entries WHERE account_id = $1 AND created_at < $2`,
      [accountId, checkAt],
    );
    const viaSnapshot = await balancesAt(pool, accountId, checkAt);
    if (JSON.stringify(viaSnapshot) !== JSON.stringify(rows[0].b))
      throw new Error(`snapshot read ${JSON.stringify(viaSnapshot)} ≠ full sum ${JSON.stringify(rows[0].b)}`);
    const result = {
      bench: 'balances',
      entries: ENTRIES,
      days: DAYS,
      reads: READS,
      snapshot_plus_day_p50_ms: round(percentile(snapshotMs, 0.5)),
      snapshot_plus_day_p95_ms: round(percentile(snapshotMs, 0.95)),
      select_1_round_trip_p50_ms: round(percentile(floorMs, 0.5)),
      full_sum_p50_ms: round(percentile(fullMs, 0.5)),
      goal_p50_ms_max: 10,
    };
    say(
      `balance at an instant: p50 ${result.snapshot_plus_day_p50_ms} ms, p95 ${result.snapshot_plus_day_p95_ms} ms (goal p50 ≤ 10 ms) ${result.snapshot_plus_day_p50_ms <= 10 ? 'MET' : 'MISSED'}; a bare SELECT 1 round trip: p50 ${result.select_1_round_trip_p50_ms} ms; summing every entry instead: p50 ${result.full_sum_p50_ms} ms`,
    );
    say(`summary: ${writeResults('balances', result)}`);
  } finally {
    await pool.end();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
