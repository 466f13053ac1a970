import { appendFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import path from 'node:path';

/**
 * The opt-in recorder behind test/fixtures/accepted-requests.jsonl (`npm run contract:record`, see
 * docs/development.md): with LEDGER_RECORD_REQUESTS set to a file, every request an in-process stack
 * (startStack) answers with a 2xx is appended to it as one JSON line — the suite, method, path as sent, query
 * string, the X-Idempotency-Key header and the JSON body. Never the Authorization header or any other one.
 * Unset (the default), it adds nothing.
 */
export interface RecordedRequest {
  suite: string;
  method: string;
  path: string;
  query: string;
  idempotency_key?: string;
  body?: unknown;
  /**
   * POST /intent/batch only: each item's own status as the answer gave it (SPEC §19: the batch is 200 while an item
   * can be its own 400), so the fixture keeps the items the service accepted, not the ones it refused inside a 200.
   */
  item_statuses?: number[];
}

/** The body the edge read (express.raw: a Buffer), as JSON; undefined when there was none or it was not JSON. */
function jsonBody(raw: unknown): unknown {
  const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : typeof raw === 'string' ? raw : undefined;
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function recordOf(suite: string, req: IncomingMessage & { originalUrl?: string; body?: unknown }): RecordedRequest {
  const url = new URL(req.originalUrl ?? req.url ?? '/', 'http://recorded.invalid');
  const key = req.headers['x-idempotency-key'];
  const body = jsonBody(req.body);
  return {
    suite,
    method: req.method ?? 'GET',
    path: url.pathname,
    query: url.search.replace(/^\?/, ''),
    ...(typeof key === 'string' ? { idempotency_key: key } : {}),
    ...(body !== undefined ? { body } : {}),
  };
}

/** The batch answer's item statuses (`data[].status`), or undefined when the answer is not one. */
function itemStatuses(answer: Buffer[]): number[] | undefined {
  try {
    const { data } = JSON.parse(Buffer.concat(answer).toString('utf8')) as { data?: Array<{ status?: unknown }> };
    return Array.isArray(data) ? data.map((item) => Number(item.status)) : undefined;
  } catch {
    return undefined;
  }
}

/** Keeps a copy of what `res` writes (the batch answer only: the one whose items are read back). */
function captureAnswer(res: ServerResponse): Buffer[] {
  const chunks: Buffer[] = [];
  const keep = (chunk: unknown) => {
    if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) chunks.push(Buffer.from(chunk));
  };
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.write = ((chunk: unknown, ...rest: unknown[]) => (keep(chunk), write(chunk, ...rest))) as typeof res.write;
  res.end = ((chunk?: unknown, ...rest: unknown[]) => (typeof chunk !== 'function' && keep(chunk), end(chunk, ...rest))) as typeof res.end;
  return chunks;
}

/** Records the server's accepted requests into LEDGER_RECORD_REQUESTS when it is set; otherwise does nothing. */
export function recordAcceptedRequests(server: Server, file = process.env.LEDGER_RECORD_REQUESTS): void {
  if (!file) return;
  const testPath = (globalThis as { expect?: { getState(): { testPath?: string } } }).expect?.getState().testPath;
  const suite = testPath ? path.basename(testPath) : 'unknown';
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const answer = req.method === 'POST' && (req.url ?? '').split('?')[0] === '/intent/batch' ? captureAnswer(res) : undefined;
    res.on('finish', () => {
      if (res.statusCode < 200 || res.statusCode > 299) return;
      const statuses = answer && itemStatuses(answer);
      appendFileSync(file, `${JSON.stringify({ ...recordOf(suite, req), ...(statuses ? { item_statuses: statuses } : {}) })}\n`);
    });
  });
}
