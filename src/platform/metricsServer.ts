import http from 'node:http';
import type { AddressInfo } from 'node:net';
import client from 'prom-client';
import { ledgerRegistry } from '../metrics';
import { portInUse } from './ports';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * GET /metrics of a worker process, which has no API to carry it: the ledger's worker-side metrics
 * (src/metrics.ts) and the process's defaults. The Temporal SDK's own metrics are on TEMPORAL_METRICS_ADDRESS.
 */
export async function serveWorkerMetrics(host: string, port: number): Promise<MetricsServer> {
  const defaults = new client.Registry();
  client.collectDefaultMetrics({ register: defaults });
  const exposed = client.Registry.merge([defaults, ledgerRegistry]);
  const server = http.createServer((req, res) => {
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
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? portInUse('worker metrics', port, 'WORKER_METRICS_PORT', host) : error),
    );
    server.listen(port, host, resolve);
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${bound}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
