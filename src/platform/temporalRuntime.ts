import { ApplicationFailure, type LogLevel, type LogMetadata } from '@temporalio/common';
import { makeTelemetryFilterString, Runtime, type Logger as TemporalLogger } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { assertPortFree, hostAndPort } from './ports';

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** An expected failure goes under `failure` as type and message (pino's `err` serializer would add the stack). */
function errorFields(error: unknown, expectedFailureTypes: ReadonlySet<string>): Record<string, unknown> {
  if (error instanceof ApplicationFailure && error.type && expectedFailureTypes.has(error.type)) {
    return { failure: { type: error.type, message: error.message } };
  }
  return { err: error };
}

/**
 * The Temporal SDK's logger (worker, workflow and activity messages, and Core's own, forwarded) written
 * through pino: one JSON line per event, with the SDK's metadata as fields and an error under `err` (or,
 * expected, under `failure`).
 */
export class PinoTemporalLogger implements TemporalLogger {
  /**
   * `expectedFailureTypes`: the failures the process's activities throw on purpose, to have Temporal retry
   * them (a webhook endpoint that answered 500 is the receiver's business, not a fault of ours), logged as
   * type and message, without a stack. The features name them; the composition root passes them in.
   */
  constructor(
    private readonly pino: Logger,
    private readonly expectedFailureTypes: ReadonlySet<string>,
  ) {}

  log(level: LogLevel, message: string, meta: LogMetadata = {}): void {
    const { error, ...fields } = meta as LogMetadata & { error?: unknown };
    this.pino[PINO_LEVEL[level] ?? 'info'](
      { ...fields, ...(error === undefined ? {} : errorFields(error, this.expectedFailureTypes)) },
      message,
    );
  }

  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }

  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }

  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }

  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }

  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

/**
 * Installs the process's Temporal runtime (once, before any worker or native connection): its logger into
 * pino, Core's own warnings forwarded to it, and the SDK's Prometheus exporter on TEMPORAL_METRICS_ADDRESS.
 */
export async function installTemporalRuntime(
  config: Pick<Config, 'TEMPORAL_METRICS_ADDRESS'>,
  log: Logger,
  expectedFailureTypes: ReadonlySet<string>,
): Promise<void> {
  const address = config.TEMPORAL_METRICS_ADDRESS;
  if (address !== 'off') {
    const { host, port } = hostAndPort(address);
    await assertPortFree('Temporal SDK metrics', port, 'TEMPORAL_METRICS_ADDRESS', host);
  }
  Runtime.install({
    logger: new PinoTemporalLogger(log.child({ component: 'temporal-sdk' }), expectedFailureTypes),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} },
      ...(address === 'off' ? {} : { metrics: { prometheus: { bindAddress: address } } }),
    },
  });
}
