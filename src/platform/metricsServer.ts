import http from 'node:http';
import type { AddressInfo } from 'node:net';
import client from 'prom-client';
import { ledgerRegistry } from '../metrics';
import { hostAndPort, portInUse } from './ports';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * GET /metrics of a worker process, which has no API to carry it: the ledger's worker-side metrics
 * (src/metrics.ts) and the process's defaults. The Temporal SDK's own metrics are on TEMPORAL_METRICS_ADDRESS.
 */
export async function serveWorkerMetrics(host: string, port: number): Promise<MetricsServer> {
  return listen(host, port, 'worker metrics', 'WORKER_METRICS_PORT', workerMetricsHandler());
}

function workerMetricsHandler(): http.RequestListener {
  const defaults = new client.Registry();
  client.collectDefaultMetrics({ register: defaults });
  const exposed = client.Registry.merge([defaults, ledgerRegistry]);
  return (req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res
        .writeHead(404, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ error: { code: 'route_not_found', message: 'Only GET /metrics is served here.' } }));
      return;
    }
    exposed.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': exposed.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  };
}

/**
 * Serves TEMPORAL_METRICS_ADDRESS by forwarding each request to `target`, where the process's Temporal runtime
 * exports the SDK's metrics: a warm spare of `npm run cluster` installs its runtime on an address of its own
 * while it stands by (the replaced process's is not free until it dies), and once it takes over, the address
 * the operator scrapes answers as the replaced process's did.
 */
export async function forwardTemporalMetrics(address: string, target: string): Promise<MetricsServer> {
  const { host, port } = hostAndPort(address);
  const upstream = hostAndPort(target);
  return listen(host, port, 'Temporal SDK metrics', 'TEMPORAL_METRICS_ADDRESS', (req, res) => {
    const forwarded = http.request(
      { host: upstream.host, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.once('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(forwarded);
  });
}

async function listen(
  host: string,
  port: number,
  component: string,
  variable: string,
  handler: http.RequestListener,
): Promise<MetricsServer> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? portInUse(component, port, variable, host) : error),
    );
    server.listen(port, host, resolve);
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
