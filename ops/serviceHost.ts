import type { Logger } from 'pino';
import { loadConfig, type Config } from '../src/config';
import type { Pool } from '../src/db/pool';
import { createLogger } from '../src/logger';
import { countOrganizations, createOrganization } from '../src/orgs/repo';
import { startEmbeddedPostgres } from './embeddedPostgres';
import { onShutdownSignal } from './run';
import { supervise, type Liveness, type SupervisedChild } from './supervisor';

/**
 * What `npm start` and `npm run cluster` share: the child services they keep running (restarted with backoff
 * when they die, /readyz 503 meanwhile, the command exits 1 naming the component once one keeps failing), the
 * teardown in reverse order of start, the embedded Postgres, and the addresses printed once ready.
 */
export interface ServiceHost {
  /** /readyz checks of the supervised children, by name. */
  readiness: Record<string, () => Promise<void>>;
  /**
   * Starts a child service, then keeps it running (and, given `liveness`, doing its work); torn down last-in
   * first-out.
   */
  startSupervised<T extends SupervisedChild>(
    component: string,
    readinessKey: string | null,
    start: () => Promise<T>,
    options?: { liveness?: Liveness<T> },
  ): Promise<T>;
  /** Registers a teardown step, run in reverse order of registration. */
  onStop(name: string, stop: () => Promise<void>): void;
  stopAll(): Promise<void>;
}

export function createServiceHost(log: Logger): ServiceHost {
  const teardown: Array<[string, () => Promise<void>]> = [];
  const readiness: Record<string, () => Promise<void>> = {};
  const supervisorLog = { warn: (message: string) => log.warn(message), info: (message: string) => log.info(message) };
  let stopping: Promise<void> | null = null;
  const stopAll = () => {
    stopping ??= (async () => {
      for (const [name, stop] of teardown.reverse()) {
        await stop().catch((error: unknown) => log.error({ err: error }, `stopping ${name} failed`));
      }
    })();
    return stopping;
  };
  const giveUp = (error: Error) => {
    process.stderr.write(`${error.message}\n`);
    void stopAll().finally(() => process.exit(1));
  };
  return {
    readiness,
    async startSupervised(component, readinessKey, start, options = {}) {
      const first = await start();
      const supervisor = supervise({
        component,
        first,
        start,
        log: supervisorLog,
        onGiveUp: giveUp,
        shuttingDown: () => stopping !== null,
        ...(options.liveness ? { liveness: options.liveness } : {}),
      });
      teardown.push([component, () => supervisor.stop()]);
      if (readinessKey) readiness[readinessKey] = () => supervisor.check();
      return first;
    },
    onStop(name, stop) {
      teardown.push([name, stop]);
    },
    stopAll,
  };
}

/** The ledger database: DATABASE_URL, else the embedded Postgres, started and supervised. */
export async function ledgerDatabase(host: ServiceHost, config: Config, say: (message: string) => void): Promise<string> {
  if (config.DATABASE_URL) return config.DATABASE_URL;
  const embedded = await host.startSupervised('embedded Postgres', 'embedded_postgres', () =>
    startEmbeddedPostgres({ dataDir: config.DATA_DIR, port: config.EMBEDDED_PG_PORT, sharedDir: config.EMBEDDED_PG_SHARED_DIR, say }),
  );
  return embedded.databaseUrl;
}

/** The lines both commands print once ready; a first start in sandbox also creates the demo organization. */
export async function announceReady(options: {
  say: (message: string) => void;
  config: Config;
  pool: Pool;
  startedAt: number;
  apiUrl: string;
  temporalUi: string | null;
  temporalAddress: string;
  /** Lines about the topology, printed after the addresses. */
  more?: string[];
}): Promise<void> {
  const { say, config, pool, apiUrl } = options;
  const firstStart = (await countOrganizations(pool)) === 0;
  const demo =
    firstStart && config.LEDGER_ENVIRONMENT === 'sandbox'
      ? await createOrganization(pool, { name: 'Demo operator', kycRequired: true, environment: 'sandbox' })
      : null;
  say('');
  say(`Payments ledger (${config.LEDGER_ENVIRONMENT}) ready in ${((Date.now() - options.startedAt) / 1000).toFixed(1)} s`);
  say(`  API            ${apiUrl}`);
  say(`  API reference  ${apiUrl}/docs`);
  say(`  Console        ${apiUrl}/console (sign in with an API key)`);
  say(`  Temporal UI    ${options.temporalUi ?? `(external Temporal at ${options.temporalAddress})`}`);
  say(
    `  Metrics        ${apiUrl}/metrics${config.TEMPORAL_METRICS_ADDRESS === 'off' ? '' : `, Temporal SDK http://${config.TEMPORAL_METRICS_ADDRESS}/metrics`}`,
  );
  for (const line of options.more ?? []) say(`  ${line}`);
  if (demo) {
    say(`  Demo organization ${demo.organization.id}, account ${demo.account.id}`);
    say(`  Demo sandbox API key (shown once): ${demo.key.api_key}`);
    say(`  Try: curl -X POST -H "Authorization: Bearer ${demo.key.api_key}" ${apiUrl}/keys/verify`);
  }
  say('Ctrl-C stops everything.');
}

/**
 * The start of `npm start` and `npm run cluster`: the configuration, the logger, a service host, and SIGINT /
 * SIGTERM stopping everything it started (`what` names the steps in the line printed then).
 */
export function startHost(what: string) {
  const startedAt = Date.now();
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL);
  const say = (message: string) => process.stdout.write(`${message}\n`);
  const host = createServiceHost(log);
  onShutdownSignal(async (signal) => {
    say(`${signal}: stopping (${what})...`);
    await host.stopAll();
    say('Stopped.');
  });
  return { startedAt, config, log, say, host };
}
