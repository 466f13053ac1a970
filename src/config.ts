import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { ACH_SETTINGS, achSettingsIssues } from './achSettings';
import { SETTLEMENT_CALENDARS } from './settlementCalendars';
import { INJECTED_BUGS } from './simBugs';

export const REPO_ROOT = path.resolve(__dirname, '..');

const port = z.coerce.number().int().min(0).max(65535);
const seconds = z.coerce.number().int().min(0).max(86_400);

/** `HH:MM` on the Eastern clock at which one settlement window ends and the next begins. */
const cutoff = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (24-hour Eastern time)');

/**
 * `TRUST_PROXY` names the proxies whose `X-Forwarded-For` we believe: off/false/empty believes none,
 * otherwise a comma-separated list of addresses, CIDR ranges or proxy-addr's names (loopback, ...).
 */
const trustProxy = z.string().transform((raw, ctx) => {
  const value = raw.trim();
  if (value === '' || value === 'off' || value === 'false' || value === '0') return false as const;
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  try {
    proxyAddr.compile(entries);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `not a list of addresses or CIDR ranges: ${(error as Error).message}` });
    return z.NEVER;
  }
  return entries;
});

/** A boolean as Temporal's environment configuration spells it: true/false or 1/0, any case. */
const flag = z.string().transform((raw, ctx) => {
  const value = raw.trim().toLowerCase();
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  ctx.addIssue({ code: 'custom', message: 'must be true or false' });
  return z.NEVER;
});

const fields = z.object({
  PORT: port.default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  DATABASE_POOL_MAX: z.coerce.number().int().min(2).max(200).default(20),
  // `npm run api` and `npm run worker` wait this long for the database, then for Temporal (and its namespace),
  // retrying with backoff and logging each attempt, before they give up and exit 1 (0: one attempt).
  DATABASE_CONNECT_TIMEOUT_SECONDS: seconds.default(120),
  TEMPORAL_CONNECT_TIMEOUT_SECONDS: seconds.default(120),
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[^:\s]+:\d+$/, 'must be host:port')
    .optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  // A cluster behind TLS or a managed service (Temporal Cloud), under the names of Temporal's own
  // environment configuration; checked below (temporalConnectionIssues), sent by temporalConnectionOptions.
  TEMPORAL_API_KEY: z.string().trim().min(1).optional(),
  TEMPORAL_TLS: flag.optional(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_CLIENT_KEY_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().trim().min(1).optional(),
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: flag.optional(),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('ledger'),
  TEMPORAL_CLI_PATH: z.string().min(1).optional(),
  TEMPORAL_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  // `npm start`: the embedded dev server is killed and restarted by its supervisor once it has run this long
  // without answering a health check that reaches its persistence (issue 38: its SQLite connection can stay
  // interrupted for good while its frontend answers). 0 turns the check off.
  TEMPORAL_DEV_SERVER_UNRESPONSIVE_SECONDS: seconds.default(60),
  // Where people open the Temporal Web UI; the operator console (GET /console) links each transaction's workflow
  // there. Absent: the embedded dev server's UI on TEMPORAL_UI_PORT when TEMPORAL_ADDRESS is unset, else no link.
  TEMPORAL_UI_URL: z.string().url().optional(),
  EMBEDDED_PG_PORT: port.default(54329),
  // `npm run cluster` (the production topology on one box): api processes sharing PORT, worker processes,
  // and the Temporal server's history shards (fixed when its database is created; see docs/production.md).
  API_PROCESSES: z.coerce.number().int().min(1).max(64).default(2),
  WORKER_PROCESSES: z.coerce.number().int().min(1).max(64).default(2),
  // `npm run cluster`: one process per role (api, worker) started ahead and connected, that a restart takes over
  // (ops/warmSpare.ts); a spare holds no database connection until then.
  CLUSTER_WARM_SPARES: z.enum(['on', 'off']).default('on'),
  TEMPORAL_HISTORY_SHARDS: z.coerce.number().int().min(1).max(16_384).default(4),
  // The databases `npm run cluster` keeps Temporal's persistence and visibility in, beside the ledger's.
  TEMPORAL_PERSISTENCE_DATABASE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case Postgres identifier')
    .default('temporal'),
  TEMPORAL_VISIBILITY_DATABASE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case Postgres identifier')
    .default('temporal_visibility'),
  DATA_DIR: z.string().min(1).default(path.join(REPO_ROOT, '.data')),
  // Only as root, where Postgres runs as the `postgres` user: when that user cannot reach the clone or
  // DATA_DIR (a 0700 home or `mktemp -d`), a copy of the Postgres binaries and the cluster live here.
  EMBEDDED_PG_SHARED_DIR: z.string().min(1).default('/var/lib/payments-ledger'),
  LEDGER_ENVIRONMENT: z.enum(['sandbox', 'production']).default('sandbox'),
  TRUST_PROXY: trustProxy.default(false),
  SETTLEMENT_CUTOFF: cutoff.default('00:00'),
  // SPEC §15: the days transfers are dated and handed to the rail.
  SETTLEMENT_CALENDAR: z.enum(SETTLEMENT_CALENDARS).default('federal_reserve'),
  // Where a process that runs a Temporal worker (`npm start`, `npm run worker`) serves the SDK's own
  // Prometheus metrics (pollers, task latencies, sticky cache...); `off` serves none.
  TEMPORAL_METRICS_ADDRESS: z
    .string()
    .regex(/^(off|[^\s:]+:\d+)$/, 'must be host:port or off')
    .default('127.0.0.1:9464'),
  // `npm run worker` serves the ledger's worker-side metrics (see src/metrics.ts) on HOST:WORKER_METRICS_PORT; 0 serves none.
  WORKER_METRICS_PORT: port.default(9465),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SANDBOX_CONFIRM_SECONDS: seconds.default(30),
  SANDBOX_SETTLE_SECONDS: seconds.default(60),
  // SPEC §24: sandbox builds an ACH file (to its simulated bank) this often; production follows ACH_WINDOWS.
  SANDBOX_ACH_WINDOW_SECONDS: z.coerce.number().int().min(1).max(3_600).default(5),
  // SPEC §25: the simulated bank returns (account number R + code) or corrects (C + code) an entry this long after it settles.
  SANDBOX_RETURN_SECONDS: z.coerce.number().int().min(1).max(3_600).default(5),
  // Webhooks (SPEC §12): the outbox dispatcher runs in every worker unless turned off; the retry schedule
  // is configurable so tests can run it in milliseconds; the secret key seals stored signing secrets (and
  // the stored answers that showed them), required in production.
  WEBHOOK_DISPATCHER: z.enum(['on', 'off']).default('on'),
  // SPEC §20: the drainer in every worker that starts queued lifecycle workflows and delivers queued
  // confirmations (src/ledger/lifecycleDrainer.ts). Off only where other workers of the deployment run it.
  LIFECYCLE_DRAINER: z.enum(['on', 'off']).default('on'),
  // Lifecycle workflows a worker keeps in memory (its sticky cache); 0: the SDK's default for the heap
  // (about 600 per GiB of heap above 200 MiB). docs/production.md has the memory each one costs.
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).max(1_000_000).default(0),
  WEBHOOK_DISPATCH_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(250),
  WEBHOOK_RETRY_INITIAL_MS: z.coerce.number().int().min(10).max(3_600_000).default(5_000),
  WEBHOOK_RETRY_MAX_MS: z.coerce.number().int().min(10).max(86_400_000).default(3_600_000),
  // The simulation's negative controls (src/simBugs.ts, docs/reliability.md): a deliberate bug, never in production.
  SIM_INJECT_BUG: z.enum(['off', ...INJECTED_BUGS]).default('off'),
  // SPEC §17: how long GET /event, resends and replays can reach an event; older ones are deleted in batches.
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3_650).default(30),
  // SPEC §26: how long a raised (or removed) user limit waits before it takes effect; a lowering is immediate.
  LIMIT_RAISE_COOLING_OFF_HOURS: z.coerce.number().int().min(0).max(8_760).default(24),
  WEBHOOK_SECRET_KEY: z
    .string()
    .refine((value) => Buffer.from(value, 'base64').length === 32, 'must be 32 bytes, base64-encoded (openssl rand -base64 32)')
    .optional(),
  // SPEC §24: the ODFI's file facts, its SFTP server and the ACH windows (src/achSettings.ts, docs/ach.md).
  ...ACH_SETTINGS,
  // SPEC §24: seals bank account numbers at rest (src/bankAccounts/sealing.ts, docs/ach.md); required in
  // production. A sandbox without it uses a fixed, published development key, so numbers are sealed there too.
  BANK_DATA_KEY: z
    .string()
    .refine((value) => Buffer.from(value, 'base64').length === 32, 'must be 32 bytes, base64-encoded (openssl rand -base64 32)')
    .optional(),
});

const schema = fields.superRefine((config, ctx) => {
  for (const [name, message] of [...temporalConnectionIssues(config), ...achSettingsIssues(config)]) {
    ctx.addIssue({ code: 'custom', path: [name], message });
  }
  if (config.LEDGER_ENVIRONMENT === 'production' && config.WEBHOOK_SECRET_KEY === undefined) {
    // Without it every webhook signing secret, and the answers that showed them, would rest in the clear.
    ctx.addIssue({
      code: 'custom',
      path: ['WEBHOOK_SECRET_KEY'],
      message: 'must be set in production (32 bytes, base64-encoded: openssl rand -base64 32); it seals webhook signing secrets',
    });
  }
  if (config.LEDGER_ENVIRONMENT === 'production' && config.SIM_INJECT_BUG !== 'off') {
    ctx.addIssue({
      code: 'custom',
      path: ['SIM_INJECT_BUG'],
      message: 'injects a deliberate bug for the simulation; refused in production',
    });
  }
  if (config.LEDGER_ENVIRONMENT === 'production' && config.BANK_DATA_KEY === undefined) {
    // Without it the sandbox's published key would seal real account numbers: no seal at all.
    ctx.addIssue({
      code: 'custom',
      path: ['BANK_DATA_KEY'],
      message: 'must be set in production (32 bytes, base64-encoded: openssl rand -base64 32); it seals bank account numbers',
    });
  }
});

export type Config = z.infer<typeof schema>;

/** Every environment variable the configuration reads (docker-compose.yml may set no other; see test/compose.test.ts). */
export const CONFIG_KEYS = Object.keys(fields.shape) as ReadonlyArray<keyof Config>;

/** Variables whose values an error message never repeats. */
const SECRETS = new Set(['TEMPORAL_API_KEY', 'WEBHOOK_SECRET_KEY', 'BANK_DATA_KEY']);

type TemporalSettings = Pick<
  z.infer<typeof fields>,
  | 'TEMPORAL_ADDRESS'
  | 'TEMPORAL_API_KEY'
  | 'TEMPORAL_TLS'
  | 'TEMPORAL_TLS_CLIENT_CERT_PATH'
  | 'TEMPORAL_TLS_CLIENT_KEY_PATH'
  | 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'
  | 'TEMPORAL_TLS_SERVER_NAME'
  | 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION'
>;

/** The TLS settings whose presence turns TLS on, as in Temporal's environment configuration. */
const TLS_SETTINGS = [
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
] as const;

/**
 * Whether the Temporal connection uses TLS: TEMPORAL_TLS when set, else on as soon as an API key or any
 * TEMPORAL_TLS_* setting is (Temporal's own rule).
 */
export function temporalTlsOf(config: TemporalSettings): boolean {
  return config.TEMPORAL_TLS ?? (config.TEMPORAL_API_KEY !== undefined || TLS_SETTINGS.some((name) => config[name] !== undefined));
}

/**
 * What is wrong with the Temporal connection settings, as [variable, message] pairs: files that cannot be
 * read or are not PEM, a certificate without its key (or with another one), TLS material or an API key
 * with TLS turned off, and any of them without TEMPORAL_ADDRESS (they would go to the local dev server).
 */
function temporalConnectionIssues(config: TemporalSettings): Array<[string, string]> {
  const issues: Array<[string, string]> = [];
  const managed = [
    ...(config.TEMPORAL_API_KEY !== undefined ? ['TEMPORAL_API_KEY'] : []),
    ...(config.TEMPORAL_TLS === true ? ['TEMPORAL_TLS'] : []),
    ...TLS_SETTINGS.filter((name) => config[name] !== undefined),
  ];
  if (managed.length > 0 && config.TEMPORAL_ADDRESS === undefined) {
    issues.push([
      'TEMPORAL_ADDRESS',
      `must be set with ${managed.join(', ')}: without it npm start runs a local dev server, which takes no credentials`,
    ]);
  }
  if (config.TEMPORAL_TLS === false) {
    if (config.TEMPORAL_API_KEY !== undefined) {
      issues.push([
        'TEMPORAL_TLS',
        'is false but TEMPORAL_API_KEY is set: Temporal Cloud takes API keys only over TLS (unset TEMPORAL_TLS)',
      ]);
    }
    for (const name of TLS_SETTINGS.filter(
      (setting) => config[setting] !== undefined && setting !== 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
    )) {
      issues.push(['TEMPORAL_TLS', `is false but ${name} is set: unset one of them`]);
    }
  }
  if (config.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === true) {
    issues.push([
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      "the Temporal TypeScript SDK always verifies the server's host name: set TEMPORAL_TLS_SERVER_NAME to a name its certificate carries",
    ]);
  }
  const cert = config.TEMPORAL_TLS_CLIENT_CERT_PATH;
  const key = config.TEMPORAL_TLS_CLIENT_KEY_PATH;
  if ((cert === undefined) !== (key === undefined)) {
    const [set, unset] =
      cert === undefined
        ? ['TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_CLIENT_CERT_PATH']
        : ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH'];
    issues.push([unset, `must be set with ${set}: mTLS needs both the client certificate and its private key`]);
  }
  const certificates = (name: string, file: string | undefined): X509Certificate[] | null => {
    const pem = readPem(issues, name, file, 'CERTIFICATE');
    if (pem === null) return null;
    try {
      return pem.map((block) => new X509Certificate(block));
    } catch (error) {
      issues.push([name, `${file} is not a PEM certificate: ${(error as Error).message}`]);
      return null;
    }
  };
  const clientCerts = certificates('TEMPORAL_TLS_CLIENT_CERT_PATH', cert);
  certificates('TEMPORAL_TLS_SERVER_CA_CERT_PATH', config.TEMPORAL_TLS_SERVER_CA_CERT_PATH);
  let privateKey: KeyObject | null = null;
  const keyPem = readPem(issues, 'TEMPORAL_TLS_CLIENT_KEY_PATH', key, 'PRIVATE KEY');
  if (keyPem !== null) {
    try {
      privateKey = createPrivateKey(keyPem[0]!);
    } catch (error) {
      issues.push(['TEMPORAL_TLS_CLIENT_KEY_PATH', `${key} is not an unencrypted PEM private key: ${(error as Error).message}`]);
    }
  }
  if (clientCerts !== null && privateKey !== null && !clientCerts[0]!.checkPrivateKey(privateKey)) {
    issues.push([
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      `${key} is not the private key of the certificate in TEMPORAL_TLS_CLIENT_CERT_PATH (${cert})`,
    ]);
  }
  return issues;
}

/** The PEM blocks of `label` (CERTIFICATE, or any PRIVATE KEY) in the file a variable names; null after an issue, or when unset. */
function readPem(issues: Array<[string, string]>, name: string, file: string | undefined, label: string): string[] | null {
  if (file === undefined) return null;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    issues.push([name, `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`]);
    return null;
  }
  const pattern =
    label === 'CERTIFICATE'
      ? /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g
      : /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]+?-----END \1PRIVATE KEY-----/g;
  const blocks = text.match(pattern);
  if (blocks === null) {
    issues.push([name, `${file} holds no PEM ${label === 'CERTIFICATE' ? 'certificate' : 'private key'} (-----BEGIN ${label}-----)`]);
    return null;
  }
  return blocks;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads the environment once at start; a bad value stops the process naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of CONFIG_KEYS) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? 'environment');
      const value = SECRETS.has(name) && input[name] !== undefined ? '(hidden)' : JSON.stringify(input[name] ?? '');
      return `  ${name}=${value}: ${issue.message}`;
    });
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** The ledger database: DATABASE_URL, else the embedded Postgres that `npm start` runs. */
export function databaseUrlOf(config: Config): string {
  return config.DATABASE_URL ?? `postgres://postgres:postgres@127.0.0.1:${config.EMBEDDED_PG_PORT}/ledger`;
}

/** The Temporal frontend: TEMPORAL_ADDRESS, else the dev server that `npm start` runs. */
export function temporalAddressOf(config: Config): string {
  return config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;
}
