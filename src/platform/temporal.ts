import fs from 'node:fs';
import { InterceptingCall, ListenerBuilder, RequesterBuilder, status, type Interceptor } from '@grpc/grpc-js';
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  isGrpcServiceError,
  makeGrpcRetryInterceptor,
  type TLSConfig,
} from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { retryWithBackoff } from '../concurrency';
import { temporalAddressOf, temporalTlsOf, type Config } from '../config';
import { StartupError } from './startupError';

/**
 * How to reach the Temporal frontend beyond its address: TLS (a server CA, a name to verify, a client
 * certificate for mTLS) and an API key. The same object goes to the client's `Connection` and the worker's
 * `NativeConnection`, whose options take both under these names.
 */
export interface TemporalConnectionOptions {
  tls: TLSConfig | false;
  apiKey?: string;
}

/** The Temporal connection settings of the configuration (checked by loadConfig), files read. */
export function temporalConnectionOptions(config: Config): TemporalConnectionOptions {
  const apiKey = config.TEMPORAL_API_KEY === undefined ? {} : { apiKey: config.TEMPORAL_API_KEY };
  if (!temporalTlsOf(config)) return { tls: false, ...apiKey };
  const tls: TLSConfig = {};
  if (config.TEMPORAL_TLS_SERVER_NAME !== undefined) tls.serverNameOverride = config.TEMPORAL_TLS_SERVER_NAME;
  if (config.TEMPORAL_TLS_SERVER_CA_CERT_PATH !== undefined)
    tls.serverRootCACertificate = fs.readFileSync(config.TEMPORAL_TLS_SERVER_CA_CERT_PATH);
  if (config.TEMPORAL_TLS_CLIENT_CERT_PATH !== undefined && config.TEMPORAL_TLS_CLIENT_KEY_PATH !== undefined) {
    tls.clientCertPair = {
      crt: fs.readFileSync(config.TEMPORAL_TLS_CLIENT_CERT_PATH),
      key: fs.readFileSync(config.TEMPORAL_TLS_CLIENT_KEY_PATH),
    };
  }
  return { tls, ...apiKey };
}

/** A plaintext connection: the local dev server and the test infrastructure. */
export const PLAINTEXT: TemporalConnectionOptions = { tls: false };

/**
 * Custom search attributes every workflow of the ledger may carry, so the Temporal UI can filter by them
 * (SPEC §9). Registered idempotently at start on the dev server and on an existing cluster alike.
 */
export const SEARCH_ATTRIBUTES = {
  OrganizationId: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  AccountId: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  TransactionStatus: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  TransactionDirection: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  SettlementDate: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  TransferId: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
} as const;

/**
 * Registers the missing SEARCH_ATTRIBUTES through the operator API. A managed service (Temporal Cloud) may
 * deny that API to the ledger's credentials: given a `log`, a denial is a warning naming the attributes
 * the operator must register (starting a workflow that carries them fails until then); without one it throws.
 */
export async function registerSearchAttributes(
  connection: Connection,
  namespace: string,
  log?: { warn(details: object, message: string): void },
): Promise<void> {
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = Object.fromEntries(Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !(name in (existing.customAttributes ?? {}))));
    if (Object.keys(missing).length === 0) return;
    try {
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
    } catch (error) {
      // Another process registering at the same moment is not a failure.
      if (!/already exists/i.test((error as Error).message)) throw error;
    }
  } catch (error) {
    const denied = isGrpcServiceError(error) && (error.code === status.PERMISSION_DENIED || error.code === status.UNIMPLEMENTED);
    if (!denied || !log) throw error;
    log.warn(
      { err: error, namespace, searchAttributes: Object.keys(SEARCH_ATTRIBUTES) },
      `the operator API refused to list or register search attributes in namespace ${namespace}; ` +
        `register them yourself, as Keyword (Temporal Cloud: tcld namespace search-attributes add, or the Cloud UI): ` +
        Object.keys(SEARCH_ATTRIBUTES).join(', '),
    );
  }
}

/** How long closing a connection waits for calls still in flight (retrying with backoff) to finish. */
const CLOSE_DRAIN_MS_MAX = 10_000;

/**
 * A client connection whose `close()` first lets in-flight calls finish. The SDK's retry interceptor
 * retries a failed call from a timer; a channel closed under it makes that timer throw "Channel has been
 * shut down" outside any caller, which ends the process. An outermost interceptor counts calls until
 * their final status (after every retry), and close waits for none (up to CLOSE_DRAIN_MS_MAX).
 */
export async function connectTemporal(
  address: string,
  namespace: string,
  connectionOptions: TemporalConnectionOptions = PLAINTEXT,
): Promise<{ connection: Connection; client: Client }> {
  let inFlight = 0;
  let drained: (() => void) | null = null;
  const counting: Interceptor = (options, nextCall) =>
    new InterceptingCall(
      nextCall(options),
      new RequesterBuilder()
        .withStart((metadata, listener, next) => {
          inFlight += 1;
          next(
            metadata,
            new ListenerBuilder()
              .withOnReceiveStatus((status, nextStatus) => {
                inFlight -= 1;
                if (inFlight === 0) drained?.();
                nextStatus(status);
              })
              .build(),
          );
        })
        .build(),
    );
  const connection = await Connection.connect({
    address,
    ...connectionOptions,
    interceptors: [counting, makeGrpcRetryInterceptor(defaultGrpcRetryOptions())],
  });
  const closeChannel = connection.close.bind(connection);
  connection.close = async () => {
    if (inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => {
          drained = resolve;
        }),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, CLOSE_DRAIN_MS_MAX);
        }),
      ]);
      clearTimeout(timer);
    }
    await closeChannel();
  };
  return { connection, client: new Client({ connection, namespace }) };
}

/** Resolves when the frontend answers within `timeoutMs`; the deadline also stops the client's own retries. */
export async function temporalHealthy(client: Client, timeoutMs = 1_500): Promise<void> {
  await client.connection.withDeadline(Date.now() + timeoutMs, () => client.workflowService.getSystemInfo({}));
}

export interface WaitForTemporalOptions {
  /** Also wait until this namespace exists (a cluster's namespace may be registered after its frontend is up). */
  namespace?: string;
  /** The longest pause between attempts; the first is 250 ms (default: 250 ms, a steady poll). */
  backoffMaxMs?: number;
  /** Told before each pause, e.g. "waiting for Temporal at temporal:7233 (attempt 3, next in 1000 ms): ..." */
  progress?: (message: string) => void;
  /** TLS and API key (temporalConnectionOptions); plaintext when absent. */
  connection?: TemporalConnectionOptions;
}

/**
 * Waits until a Temporal frontend answers (and `namespace`, if given, exists), up to `timeoutMs`; then
 * throws a StartupError naming the address and the last failure.
 */
export async function waitForTemporal(address: string, timeoutMs: number, options: WaitForTemporalOptions = {}): Promise<void> {
  const { namespace, progress } = options;
  const what = namespace ? `Temporal namespace ${namespace} at ${address}` : `Temporal at ${address}`;
  try {
    await retryWithBackoff(
      async () => {
        const connection = await Connection.connect({ address, ...(options.connection ?? PLAINTEXT), connectTimeout: 1_000 });
        try {
          await connection.workflowService.getSystemInfo({});
          if (namespace) await connection.workflowService.describeNamespace({ namespace });
        } finally {
          await connection.close();
        }
      },
      {
        timeoutMs,
        initialMs: 250,
        maxMs: options.backoffMaxMs ?? 250,
        onRetry: ({ attempt, error, delayMs }) =>
          progress?.(`waiting for ${what} (attempt ${attempt}, next in ${delayMs} ms): ${(error as Error).message}`),
      },
    );
  } catch (error) {
    throw new StartupError(`${what} did not answer within ${timeoutMs} ms: ${(error as Error)?.message}`);
  }
}

/**
 * Runs `work` with a client of the deployment's Temporal and closes the connection after it, whatever it
 * answered: what an operator command that talks to Temporal needs (the CLI's window runs and reconcile).
 */
export async function withTemporalClient<T>(config: Config, work: (client: Client) => Promise<T>): Promise<T> {
  const { connection, client } = await connectTemporal(
    temporalAddressOf(config),
    config.TEMPORAL_NAMESPACE,
    temporalConnectionOptions(config),
  );
  try {
    return await work(client);
  } finally {
    await connection.close();
  }
}
