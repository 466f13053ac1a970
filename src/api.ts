import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from './config';
import type { Pool } from './db/pool';
import { createApp } from './http/app';
import { purgeExpiredEvents } from './events/retention';
import { purgeEdgeState } from './http/housekeeping';
import { answerParserErrors } from './http/parserErrors';
import { systemClock, type Clock } from './http/route';
import { temporalHealthy } from './platform/temporal';
import { appFeatures } from './routes';

/** How long closing the api waits for requests in flight before it cuts their connections. */
const SHUTDOWN_GRACE_MS = 5_000;

const HOUSEKEEPING_INTERVAL_MS = 10 * 60_000;

export interface RunningApi {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** Serves the HTTP API until `close`; every 10 minutes also purges expired idempotency records and events past retention. */
export async function startApi(options: {
  config: Config;
  pool: Pool;
  log: Logger;
  temporal: Client;
  clock?: Clock;
  /** More /readyz checks beside Postgres (`npm start` adds its supervised services); Temporal is named, never failing. */
  readiness?: Record<string, () => Promise<void>>;
  /** More checks /readyz names without failing on them (`npm start`'s supervised Temporal dev server). */
  informational?: Record<string, () => Promise<void>>;
}): Promise<RunningApi> {
  const { config, pool, log, temporal } = options;
  const clock = options.clock ?? systemClock;
  const { app, edge } = createApp(
    {
      config,
      pool,
      log,
      clock,
      services: { taskQueue: config.TEMPORAL_TASK_QUEUE },
      readiness: {
        postgres: async () => {
          await pool.query('SELECT 1');
        },
        ...options.readiness,
      },
      informational: { temporal: () => temporalHealthy(temporal), ...options.informational },
    },
    appFeatures(config, () => clock.now()),
  );
  const server = await new Promise<Server>((resolve, reject) => {
    const listening = app.listen(config.PORT, config.HOST, (error?: Error) => (error ? reject(error) : resolve(listening)));
  }).catch(async (error: unknown) => {
    await edge.close();
    throw error;
  });
  server.keepAliveTimeout = 65_000;
  answerParserErrors(server, log);
  const housekeeping = setInterval(() => {
    purgeEdgeState(pool, clock.now()).catch((error: unknown) => log.warn({ err: error }, 'edge housekeeping failed'));
    purgeExpiredEvents(pool, { now: clock.now(), retentionDays: config.EVENT_RETENTION_DAYS }).catch((error: unknown) =>
      log.warn({ err: error }, 'event retention sweep failed'),
    );
  }, HOUSEKEEPING_INTERVAL_MS);
  housekeeping.unref();
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${port}`,
    async close() {
      clearInterval(housekeeping);
      await new Promise<void>((resolve) => {
        // In-flight requests get SHUTDOWN_GRACE_MS to finish; then whatever is still open is cut: a client that
        // stopped reading, or a connection opened ahead of a request that never came (a browser's preconnect),
        // which Node counts as active until its headersTimeout (60 s).
        const cut = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      });
      await edge.close();
    },
  };
}
