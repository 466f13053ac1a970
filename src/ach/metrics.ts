import client from 'prom-client';
import type { Queryable } from '../db/pool';
import { achDeliveryStatus } from '../achSettings';
import { rowOf } from '../assert';

/**
 * SPEC §24's ACH gauges, read from the database at each scrape (so every api shows the deployment's one
 * rail; do not sum them over processes): entries queued, files by status, the oldest undelivered file's age,
 * and whether delivery is configured at all. A scrape that cannot read them leaves the previous values.
 */
export function registerAchGauges(registry: client.Registry, db: Queryable, config: Parameters<typeof achDeliveryStatus>[0]): void {
  type Reading = { queued: number; files: Record<string, number>; oldestUndeliveredSeconds: number };
  let last: Promise<Reading> | null = null;
  const read = () => (last ??= readAch(db).finally(() => setImmediate(() => (last = null))));
  new client.Gauge({
    name: 'ledger_ach_entries_queued',
    help: 'ACH entries waiting for a window to put them in a file',
    registers: [registry],
    async collect() {
      const reading = await read().catch(() => null);
      if (reading) this.set(reading.queued);
    },
  });
  new client.Gauge({
    name: 'ledger_ach_files',
    help: 'ACH files by status (built: not yet delivered to the bank)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const reading = await read().catch(() => null);
      if (reading) for (const status of ['built', 'delivered', 'settled']) this.set({ status }, reading.files[status] ?? 0);
    },
  });
  new client.Gauge({
    name: 'ledger_ach_oldest_undelivered_file_age_seconds',
    help: 'Age of the oldest ACH file built and not delivered to the bank (0 when none)',
    registers: [registry],
    async collect() {
      const reading = await read().catch(() => null);
      if (reading) this.set(reading.oldestUndeliveredSeconds);
    },
  });
  new client.Gauge({
    name: 'ledger_ach_delivery_configured',
    help: 'Whether ACH files reach a bank: 1 SFTP or the sandbox simulated bank, 0 production without ACH_SFTP_URL (files stay built)',
    registers: [registry],
    collect() {
      this.set(achDeliveryStatus(config) === 'not_configured' ? 0 : 1);
    },
  });
}

async function readAch(db: Queryable) {
  const { rows } = await db.query<{ queued: number; files: Record<string, number> | null; oldest: number | null }>(
    `SELECT (SELECT count(*)::int FROM ach_entries WHERE status = 'queued') AS queued,
            (SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*)::int AS n FROM ach_files GROUP BY status) s) AS files,
            (SELECT extract(epoch FROM now() - min(created_at))::float8 FROM ach_files WHERE status = 'built') AS oldest`,
  );
  const row = rowOf(rows, 'a select of subqueries answers one row');
  return { queued: row.queued, files: row.files ?? {}, oldestUndeliveredSeconds: row.oldest ?? 0 };
}
