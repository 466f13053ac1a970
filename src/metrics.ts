import client from 'prom-client';
import type { Queryable } from './db/pool';
import { temporalBacklog } from './platform/temporalCommands';

/**
 * The ledger's own Prometheus metrics, one registry per process. Each is incremented where the thing
 * happens, only after its database transaction committed, and only by the code path that made the change
 * (a retried or replayed step that finds the change already made counts nothing), so every committed event
 * is counted once across all processes. Where each is observed:
 *
 * | metric | process |
 * |---|---|
 * | ledger_transactions_total | api (after the request's commit) |
 * | ledger_events_deleted_total | api (its housekeeping's retention sweep) |
 * | ledger_lifecycle_start_backlog, ledger_lifecycle_start_lag_seconds | api (read from Postgres at each scrape: the whole deployment's queue) |
 * | ledger_transaction_transitions_total, ledger_transfers_total, ledger_webhook_deliveries_total, ledger_settlement_window_duration_seconds | worker (in its activities) |
 * | ledger_transaction_transitions_total of a sandbox confirmation (POST /simulate/transaction/{id}/confirm) | api (after the request's commit) |
 *
 * `npm start` runs both in one process and its api's /metrics shows them all; separate worker processes
 * serve theirs on WORKER_METRICS_PORT. Sum over processes.
 */
export const ledgerRegistry = new client.Registry();

export const ledgerMetrics = {
  transactionsTotal: new client.Counter({
    name: 'ledger_transactions_total',
    help: 'Transactions recorded (committed), by direction and type (intent, refund, dispute)',
    labelNames: ['direction', 'type'] as const,
    registers: [ledgerRegistry],
  }),
  transitionsTotal: new client.Counter({
    name: 'ledger_transaction_transitions_total',
    help: 'Committed transaction status changes after creation, by the status moved to',
    labelNames: ['to_status'] as const,
    registers: [ledgerRegistry],
  }),
  transfersTotal: new client.Counter({
    name: 'ledger_transfers_total',
    help: 'Settlement transfers created (committed), by direction (disbursement, collection)',
    labelNames: ['direction'] as const,
    registers: [ledgerRegistry],
  }),
  webhookDeliveriesTotal: new client.Counter({
    name: 'ledger_webhook_deliveries_total',
    help: 'Webhook delivery attempts recorded, by outcome (succeeded, failed, endpoint_disabled, refused)',
    labelNames: ['outcome'] as const,
    registers: [ledgerRegistry],
  }),
  eventsDeletedTotal: new client.Counter({
    name: 'ledger_events_deleted_total',
    help: 'Events deleted by the retention sweep (EVENT_RETENTION_DAYS), with their delivery attempts',
    registers: [ledgerRegistry],
  }),
  settlementWindowDurationSeconds: new client.Histogram({
    name: 'ledger_settlement_window_duration_seconds',
    help: "Time to close a settlement window: from its window workflow's start to every account's settlement started",
    buckets: [0.1, 0.5, 1, 2.5, 5, 15, 60, 300, 900, 3600],
    registers: [ledgerRegistry],
  }),
};

/**
 * SPEC §20's queue gauges, on `registry` (an app's own): read from both queues to Temporal (the lifecycle
 * queue and the command queue, every kind) at each scrape, so every api shows the deployment's one backlog
 * (do not sum them over processes). The names stay those of the lifecycle queue's first gauges. A scrape that cannot read it
 * leaves the previous values.
 */
export function registerLifecycleQueueGauges(registry: client.Registry, db: Queryable): void {
  let last: Promise<{ count: number; oldestAgeSeconds: number }> | null = null;
  // Both gauges from one query per scrape.
  const read = () => (last ??= temporalBacklog(db).finally(() => setImmediate(() => (last = null))));
  new client.Gauge({
    name: 'ledger_lifecycle_start_backlog',
    help: 'Workflow starts and signals committed that Temporal has not accepted yet: lifecycle starts, confirmations and queued commands (rows of lifecycle_queue and temporal_commands)',
    registers: [registry],
    async collect() {
      const backlog = await read().catch(() => null);
      if (backlog) this.set(backlog.count);
    },
  });
  new client.Gauge({
    name: 'ledger_lifecycle_start_lag_seconds',
    help: 'Age of the oldest committed workflow start or signal Temporal has not accepted yet, of any kind (0 when none waits)',
    registers: [registry],
    async collect() {
      const backlog = await read().catch(() => null);
      if (backlog) this.set(backlog.oldestAgeSeconds);
    },
  });
}
