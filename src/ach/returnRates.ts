import client from 'prom-client';
import type { Queryable } from '../db/pool';
import { recordEvent } from '../outbox';
import { z } from '../zod';
import { rowOf } from '../assert';

/**
 * SPEC §25 return rates per organization over the last 60 days of debit entries, against the NACHA Rules'
 * thresholds, read from ach_return_counts (at most 60 days × 16 slots per organization, kept by the database as
 * entries are queued and returns applied; migrations/0042, 0048), never from a scan of the entries.
 */
export const RETURN_RATE_WINDOW_DAYS = 60;
export const RETURN_RATE_THRESHOLDS = { unauthorized: 0.005, administrative: 0.03, overall: 0.15 } as const;
type Kind = keyof typeof RETURN_RATE_THRESHOLDS;
const KINDS = Object.keys(RETURN_RATE_THRESHOLDS) as Kind[];

export const rateSchema = z.object({
  count: z.number().int().openapi({ description: 'Debits of the window returned with a code of this kind.', example: 3 }),
  rate: z.number().openapi({ description: 'count / debits (0 when there were no debits).', example: 0.003 }),
  threshold: z.number().openapi({ description: "The NACHA Rules' threshold for this kind.", example: 0.005 }),
});

export const returnRatesSchema = z
  .object({
    window_days: z.literal(RETURN_RATE_WINDOW_DAYS),
    debits: z
      .number()
      .int()
      .openapi({ description: 'Debit entries created in the last 60 days (UTC days, today included).', example: 1000 }),
    unauthorized: rateSchema.openapi({ description: 'R05, R07, R10, R11, R29, R51; threshold 0.5 %.' }),
    administrative: rateSchema.openapi({ description: 'R02, R03, R04; threshold 3 %.' }),
    overall: rateSchema.openapi({ description: 'Every return code; threshold 15 %.' }),
  })
  .openapi('AchReturnRates');
export type ReturnRates = z.infer<typeof returnRatesSchema>;

const SUMS = `coalesce(sum(debits), 0)::int AS debits, coalesce(sum(unauthorized), 0)::int AS unauthorized,
  coalesce(sum(administrative), 0)::int AS administrative, coalesce(sum(returned), 0)::int AS overall`;
const IN_WINDOW = `day > (now() AT TIME ZONE 'UTC')::date - ${RETURN_RATE_WINDOW_DAYS}`;

type Sums = Record<'debits' | Kind, number>;

function ratesOf(sums: Sums): ReturnRates {
  const of = (kind: Kind) => ({
    count: sums[kind],
    rate: sums.debits === 0 ? 0 : sums[kind] / sums.debits,
    threshold: RETURN_RATE_THRESHOLDS[kind],
  });
  return {
    window_days: RETURN_RATE_WINDOW_DAYS,
    debits: sums.debits,
    unauthorized: of('unauthorized'),
    administrative: of('administrative'),
    overall: of('overall'),
  };
}

export async function returnRates(db: Queryable, organizationId: string): Promise<ReturnRates> {
  const { rows } = await db.query<Sums>(`SELECT ${SUMS} FROM ach_return_counts WHERE organization_id = $1 AND ${IN_WINDOW}`, [
    organizationId,
  ]);
  return ratesOf(rowOf(rows, 'an aggregate without GROUP BY answers one row'));
}

/**
 * After returns were applied (in the same transaction): each threshold crossed upward since the last look emits
 * `ach.return_rate_exceeded` once; a rate back under its threshold arms it again.
 */
export async function checkReturnRateCrossings(db: Queryable, organizationId: string, now: Date): Promise<Kind[]> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtext('ach return rates ' || $1))`, [organizationId]);
  const rates = await returnRates(db, organizationId);
  const { rows } = await db.query<{ kind: Kind; exceeded: boolean }>(
    'SELECT kind, exceeded FROM ach_return_rate_alerts WHERE organization_id = $1',
    [organizationId],
  );
  const was = new Map(rows.map((r) => [r.kind, r.exceeded]));
  const crossed: Kind[] = [];
  for (const kind of KINDS) {
    const exceeded = rates[kind].rate > RETURN_RATE_THRESHOLDS[kind];
    if (exceeded === (was.get(kind) ?? false)) continue;
    await db.query(
      `INSERT INTO ach_return_rate_alerts (organization_id, kind, exceeded, changed_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (organization_id, kind) DO UPDATE SET exceeded = EXCLUDED.exceeded, changed_at = EXCLUDED.changed_at`,
      [organizationId, kind, exceeded, now],
    );
    if (!exceeded) continue;
    crossed.push(kind);
    await recordEvent(db, {
      organizationId,
      type: 'ach.return_rate_exceeded',
      data: { id: `${organizationId}:${kind}`, kind, ...rates[kind], debits: rates.debits, window_days: RETURN_RATE_WINDOW_DAYS },
      createdAt: now,
    });
  }
  return crossed;
}

/** `ledger_ach_return_rate{organization_id,kind}`: each organization's rates at each scrape, one grouped read of the kept counts. */
export function registerReturnRateGauges(registry: client.Registry, db: Queryable): void {
  new client.Gauge({
    name: 'ledger_ach_return_rate',
    help: 'ACH return rate of each organization over the last 60 days of debit entries, by kind (unauthorized, administrative, overall)',
    labelNames: ['organization_id', 'kind'] as const,
    registers: [registry],
    async collect() {
      const { rows } = await db
        .query<Sums & { organization_id: string }>(
          `SELECT organization_id, ${SUMS} FROM ach_return_counts WHERE ${IN_WINDOW} GROUP BY organization_id`,
        )
        .catch(() => ({ rows: null }));
      if (!rows) return;
      this.reset();
      for (const row of rows) {
        const rates = ratesOf(row);
        for (const kind of KINDS) this.set({ organization_id: row.organization_id, kind }, rates[kind].rate);
      }
    },
  });
}
