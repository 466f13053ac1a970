/**
 * Connection settings for an existing cluster or a managed Temporal service (TLS, mTLS, API key): what
 * loadConfig accepts and refuses, and that the settings reach the wire for the client and the worker.
 * Certificates are made at test time with openssl: a CA, a server certificate for `temporal.test` and
 * 127.0.0.1, a client certificate, and a second CA that signed none of them.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig, type Config } from '../src/config';
import { createPool } from '../src/db/pool';
import { createLogger } from '../src/logger';
import {
  connectTemporal,
  registerSearchAttributes,
  SEARCH_ATTRIBUTES,
  temporalConnectionOptions,
  temporalHealthy,
  waitForTemporal,
} from '../src/platform/temporal';
import { startWorker } from '../src/worker';
import { randomString } from '../src/ids';
import { hostAndPort } from '../src/platform/ports';
import { testConfig, testInfra } from './support/harness';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-temporal-tls-'));
const file = (name: string) => path.join(dir, name);

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A key pair and a certificate for `subject`, signed by `ca` (self-signed without one). */
function makeCertificate(name: string, subject: string, extensions: string[], ca?: string): void {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`];
  if (!ca) {
    openssl('req', '-x509', ...ec, '-out', `${name}.pem`, '-days', '2', '-subj', subject, ...extensions.flatMap((ext) => ['-addext', ext]));
    return;
  }
  openssl('req', '-new', ...ec, '-out', `${name}.csr`, '-subj', subject);
  fs.writeFileSync(file(`${name}.ext`), `${extensions.join('\n')}\n`);
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-set_serial',
    String(Date.now()),
    '-days',
    '2',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
  );
}

beforeAll(() => {
  const caExtensions = ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign'];
  makeCertificate('ca', '/CN=ledger test CA', caExtensions);
  makeCertificate('other-ca', '/CN=another CA', caExtensions);
  makeCertificate('server', '/CN=temporal.test', ['subjectAltName=DNS:temporal.test,IP:127.0.0.1', 'extendedKeyUsage=serverAuth'], 'ca');
  makeCertificate('client', '/CN=ledger worker', ['extendedKeyUsage=clientAuth'], 'ca');
  makeCertificate('stranger', '/CN=someone else', ['extendedKeyUsage=clientAuth'], 'ca');
  fs.writeFileSync(file('not-pem.txt'), 'hello, not a certificate\n');
  fs.writeFileSync(file('garbled.pem'), '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Settings for mTLS to the test server: the test CA, the client pair, the name in the server's certificate. */
function mtls(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: 'temporal.example.com:7233',
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem'),
    TEMPORAL_TLS_CLIENT_CERT_PATH: file('client.pem'),
    TEMPORAL_TLS_CLIENT_KEY_PATH: file('client.key'),
    TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
    ...overrides,
  };
}

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('loadConfig accepted the settings');
}

describe('Temporal connection settings (loadConfig)', () => {
  test('none of them: plaintext, as before', () => {
    const config = loadConfig({});
    expect(temporalConnectionOptions(config)).toEqual({ tls: false });
  });

  test('mTLS settings load, and become the SDK options with the files read', () => {
    const options = temporalConnectionOptions(loadConfig(mtls()));
    expect(options.apiKey).toBeUndefined();
    expect(options.tls).toEqual({
      serverNameOverride: 'temporal.test',
      serverRootCACertificate: fs.readFileSync(file('ca.pem')),
      clientCertPair: { crt: fs.readFileSync(file('client.pem')), key: fs.readFileSync(file('client.key')) },
    });
  });

  test('an API key alone turns TLS on (system roots); TEMPORAL_TLS=true alone too', () => {
    const withKey = loadConfig({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'secret-key' });
    expect(temporalConnectionOptions(withKey)).toEqual({ tls: {}, apiKey: 'secret-key' });
    expect(temporalConnectionOptions(loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS: 'true' }))).toEqual({
      tls: {},
    });
    expect(temporalConnectionOptions(loadConfig({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS: '0' }))).toEqual({
      tls: false,
    });
  });

  test.each<[string, Record<string, string>, string, RegExp]>([
    [
      'a certificate without its key',
      mtls({ TEMPORAL_TLS_CLIENT_KEY_PATH: '' }),
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      /must be set with TEMPORAL_TLS_CLIENT_CERT_PATH/,
    ],
    [
      'a key without its certificate',
      mtls({ TEMPORAL_TLS_CLIENT_CERT_PATH: '' }),
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
      /must be set with TEMPORAL_TLS_CLIENT_KEY_PATH/,
    ],
    [
      "another certificate's key",
      mtls({ TEMPORAL_TLS_CLIENT_KEY_PATH: 'stranger.key' }),
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      /is not the private key of the certificate/,
    ],
    [
      'a certificate file that is not PEM',
      mtls({ TEMPORAL_TLS_CLIENT_CERT_PATH: 'not-pem.txt' }),
      'TEMPORAL_TLS_CLIENT_CERT_PATH',
      /holds no PEM certificate/,
    ],
    [
      'a PEM block that is no certificate',
      mtls({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: 'garbled.pem' }),
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      /is not a PEM certificate/,
    ],
    [
      'a key file that is not PEM',
      mtls({ TEMPORAL_TLS_CLIENT_KEY_PATH: 'not-pem.txt' }),
      'TEMPORAL_TLS_CLIENT_KEY_PATH',
      /holds no PEM private key/,
    ],
    [
      'a missing CA file',
      mtls({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: 'missing.pem' }),
      'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
      /cannot read .*missing\.pem: ENOENT/,
    ],
    [
      'TLS settings without TEMPORAL_ADDRESS',
      mtls({ TEMPORAL_ADDRESS: '' }),
      'TEMPORAL_ADDRESS',
      /must be set with .*TEMPORAL_TLS_CLIENT_CERT_PATH.*local dev server/,
    ],
    ['an API key without TEMPORAL_ADDRESS', { TEMPORAL_API_KEY: 'secret-key' }, 'TEMPORAL_ADDRESS', /must be set with TEMPORAL_API_KEY/],
    [
      'an API key with TEMPORAL_TLS=false',
      { TEMPORAL_ADDRESS: 'a:7233', TEMPORAL_API_KEY: 'secret-key', TEMPORAL_TLS: 'false' },
      'TEMPORAL_TLS',
      /TEMPORAL_API_KEY is set: .*only over TLS/,
    ],
    ['mTLS with TEMPORAL_TLS=false', mtls({ TEMPORAL_TLS: 'false' }), 'TEMPORAL_TLS', /is false but TEMPORAL_TLS_CLIENT_CERT_PATH is set/],
    ['TEMPORAL_TLS neither true nor false', { TEMPORAL_ADDRESS: 'a:7233', TEMPORAL_TLS: 'yes' }, 'TEMPORAL_TLS', /must be true or false/],
    [
      'host verification turned off',
      mtls({ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }),
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
      /always verifies/,
    ],
  ])('%s is refused naming the variable', (_case, env, variable, message) => {
    // Relative paths resolve against the process's directory: make them the test's files.
    const absolute = Object.fromEntries(
      Object.entries(env).map(([name, value]) => [name, /_PATH$/.test(name) && value && !path.isAbsolute(value) ? file(value) : value]),
    );
    const text = refusal(absolute);
    const line = text.split('\n').find((each) => each.trimStart().startsWith(`${variable}=`));
    expect(line).toMatch(message);
  });

  test('an API key is never repeated in an error', () => {
    const text = refusal({ TEMPORAL_ADDRESS: 'a:7233', TEMPORAL_API_KEY: 'secret-key', TEMPORAL_TLS: 'nope' });
    expect(text).toMatch(/TEMPORAL_TLS="nope"/);
    expect(text).not.toContain('secret-key');
  });
});

/**
 * A TLS-terminating proxy in front of the plaintext dev server: mTLS (client certificates of the test CA
 * only), ALPN h2, bytes forwarded untouched. It counts the connections it forwarded and keeps the TLS
 * errors of those it refused.
 */
async function startTlsProxy(): Promise<{ address: string; forwarded: () => number; tlsErrors: string[]; close(): Promise<void> }> {
  const target = hostAndPort(testInfra().temporalAddress);
  let forwarded = 0;
  const tlsErrors: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = tls.createServer(
    {
      cert: fs.readFileSync(file('server.pem')),
      key: fs.readFileSync(file('server.key')),
      ca: fs.readFileSync(file('ca.pem')),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (socket) => {
      forwarded += 1;
      const upstream = net.connect(target.port, target.host);
      for (const each of [socket, upstream]) {
        sockets.add(each);
        each.on('error', () => undefined);
        each.on('close', () => sockets.delete(each));
      }
      socket.pipe(upstream).pipe(socket);
      socket.on('close', () => upstream.destroy());
      upstream.on('close', () => socket.destroy());
    },
  );
  server.on('tlsClientError', (error) => tlsErrors.push(error.message));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    forwarded: () => forwarded,
    tlsErrors,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('TLS and mTLS on the wire (a TLS proxy in front of the dev server)', () => {
  let proxy: Awaited<ReturnType<typeof startTlsProxy>>;
  const configFor = (overrides: Record<string, string> = {}): Config =>
    testConfig(mtls({ TEMPORAL_ADDRESS: proxy.address, WEBHOOK_DISPATCHER: 'off', ...overrides }));

  beforeAll(async () => {
    proxy = await startTlsProxy();
  });
  afterAll(async () => {
    await proxy.close();
  });

  test('the client with the configured certificate reaches the server through the proxy', async () => {
    const before = proxy.forwarded();
    const config = configFor();
    const { connection, client } = await connectTemporal(proxy.address, config.TEMPORAL_NAMESPACE, temporalConnectionOptions(config));
    try {
      await temporalHealthy(client, 10_000);
      const info = await client.workflowService.getSystemInfo({});
      expect(info.capabilities).toBeTruthy();
    } finally {
      await connection.close();
    }
    expect(proxy.forwarded()).toBeGreaterThan(before);
  });

  test('without the client certificate the proxy refuses the handshake', async () => {
    const config = configFor({ TEMPORAL_TLS_CLIENT_CERT_PATH: '', TEMPORAL_TLS_CLIENT_KEY_PATH: '' });
    const errorsBefore = proxy.tlsErrors.length;
    const options = temporalConnectionOptions(config);
    expect(options.tls).not.toHaveProperty('clientCertPair');
    await expect(waitForTemporal(proxy.address, 1_500, { connection: options })).rejects.toThrow(/did not answer/);
    expect(proxy.tlsErrors.slice(errorsBefore).join('\n')).toMatch(/certificate/i);
  });

  test('a server CA that did not sign the server certificate fails the client', async () => {
    const config = configFor({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('other-ca.pem') });
    const errorsBefore = proxy.tlsErrors.length;
    await expect(waitForTemporal(proxy.address, 1_500, { connection: temporalConnectionOptions(config) })).rejects.toThrow(
      /did not answer/,
    );
    // The client hung up on the server's certificate: the proxy saw the alert, never a forwarded call.
    expect(proxy.tlsErrors.slice(errorsBefore).join('\n')).toMatch(/unknown ca|certificate|alert/i);
  });

  test('the right settings pass the same wait (the failures above are the settings, not the proxy)', async () => {
    await waitForTemporal(proxy.address, 10_000, { connection: temporalConnectionOptions(configFor()) });
  });

  test('the worker (NativeConnection) connects through the proxy with the configured certificate and runs a workflow', async () => {
    const config = configFor();
    const log = createLogger('silent');
    const pool = createPool(testInfra().databaseUrl, 2);
    const { connection, client } = await connectTemporal(proxy.address, config.TEMPORAL_NAMESPACE, temporalConnectionOptions(config));
    const before = proxy.forwarded();
    const worker = await startWorker({
      config,
      pool,
      log,
      temporal: client,
      address: proxy.address,
      workflowBundlePath: testInfra().workflowBundlePath,
      sidecars: [],
    });
    try {
      // The worker's own connection went through the proxy (the client's was opened before).
      expect(proxy.forwarded()).toBeGreaterThan(before);
      // A delivery whose event and endpoint do not exist: one workflow task and one activity, no side effects.
      const result = await client.workflow.execute('webhookDeliveryWorkflow', {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        workflowId: `tls-${randomString(10)}`,
        args: [
          {
            eventId: `evt_${randomString(12)}`,
            endpointId: `whe_${randomString(12)}`,
            retry: { initialIntervalMs: 100, maxIntervalMs: 100 },
          },
        ],
        workflowExecutionTimeout: '30s',
      });
      expect(result).toEqual({ outcome: 'endpoint_inactive' });
    } finally {
      await worker.shutdown();
      await connection.close();
      await pool.end();
    }
  });

  test('the worker without the client certificate does not get in', async () => {
    const config = configFor({ TEMPORAL_TLS_CLIENT_CERT_PATH: '', TEMPORAL_TLS_CLIENT_KEY_PATH: '' });
    const errorsBefore = proxy.tlsErrors.length;
    await expect(NativeConnection.connect({ address: proxy.address, ...temporalConnectionOptions(config) })).rejects.toThrow();
    expect(proxy.tlsErrors.slice(errorsBefore).join('\n')).toMatch(/certificate/i);
  });
});

/**
 * A gRPC-over-TLS endpoint that answers GetSystemInfo and denies every other call PERMISSION_DENIED (as
 * Temporal Cloud does what an API key may not do), keeping the headers of each request.
 */
async function startDenyingServer(): Promise<{ address: string; requests: http2.IncomingHttpHeaders[]; close(): Promise<void> }> {
  const requests: http2.IncomingHttpHeaders[] = [];
  const server = http2.createSecureServer({
    cert: fs.readFileSync(file('server.pem')),
    key: fs.readFileSync(file('server.key')),
    ALPNProtocols: ['h2'],
  });
  server.on('stream', (stream, headers) => {
    requests.push(headers);
    stream.on('error', () => undefined);
    if (headers[':path'] === '/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo') {
      // The one call the SDKs make while connecting: answered OK with an empty message (no capabilities).
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.alloc(5));
      return;
    }
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '7', 'grpc-message': 'Request unauthorized.' },
      { endStream: true },
    );
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    requests,
    async close() {
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('API key on the wire', () => {
  let server: Awaited<ReturnType<typeof startDenyingServer>>;
  const apiKey = `key-${randomString(16)}`;
  const configFor = (): Config =>
    loadConfig({
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_NAMESPACE: 'payments.acct',
      TEMPORAL_API_KEY: apiKey,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: file('ca.pem'),
      TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
      LOG_LEVEL: 'silent',
    });

  beforeAll(async () => {
    server = await startDenyingServer();
  });
  afterAll(async () => {
    await server.close();
  });

  test('the client sends it as a bearer token; a denied operator API is a warning naming the search attributes', async () => {
    const config = configFor();
    const { connection } = await connectTemporal(server.address, config.TEMPORAL_NAMESPACE, temporalConnectionOptions(config));
    const warnings: string[] = [];
    try {
      const before = server.requests.length;
      await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE, { warn: (_details, message) => warnings.push(message) });
      const request = server.requests[before]!;
      expect(request[':path']).toBe('/temporal.api.operatorservice.v1.OperatorService/ListSearchAttributes');
      expect(request.authorization).toBe(`Bearer ${apiKey}`);
      // Without a log to warn on, the denial is the caller's to handle.
      await expect(registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE)).rejects.toMatchObject({ code: 7 });
    } finally {
      await connection.close();
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('payments.acct');
    for (const name of Object.keys(SEARCH_ATTRIBUTES)) expect(warnings[0]).toContain(name);
  });

  test("the worker's NativeConnection sends it too", async () => {
    const config = configFor();
    const before = server.requests.length;
    // Core asks for the server's capabilities while connecting (the one call this server answers).
    const connection = await NativeConnection.connect({ address: server.address, ...temporalConnectionOptions(config) });
    await connection.close();
    const requests = server.requests.slice(before);
    expect(requests.map((request) => request[':path'])).toContain('/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo');
    for (const request of requests) expect(request.authorization).toBe(`Bearer ${apiKey}`);
  });
});
