import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { WEBHOOK_LIMITS } from './limits';

export const USER_AGENT = 'payments-ledger-webhooks/0.0.1';

/** A lookup that answers with addresses already resolved and checked, so the connection goes where we judged. */
function pinnedLookup(addresses: LookupAddress[]): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  }) as unknown as LookupFunction;
}

/**
 * POSTs `body` once, within `timeoutMs` from connect to the answer's last byte (or its first
 * `responseBytesMax` bytes). Answers the status code; throws on network errors and timeouts. Redirects are
 * not followed: a 3xx is an answer like any other non-2xx.
 */
export function postWebhook(
  url: URL,
  body: string,
  headers: Record<string, string>,
  options: { pinned: LookupAddress[] | null; timeoutMs?: number; signal?: AbortSignal },
): Promise<number> {
  const timeoutMs = options.timeoutMs ?? WEBHOOK_LIMITS.attemptTimeoutMs;
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<number>((resolve, reject) => {
    let settled = false;
    const finish = (error: Error | null, status?: number) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(status!);
    };
    const request = transport.request(
      url,
      {
        method: 'POST',
        // A fresh connection per attempt: pinning and timeouts stay per target, no pooled socket outlives us.
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': USER_AGENT,
          ...headers,
        },
        ...(options.pinned ? { lookup: pinnedLookup(options.pinned) } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      },
      (response) => {
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > WEBHOOK_LIMITS.responseBytesMax) {
            // The status is all we keep; a receiver streaming a large answer need not be read to the end.
            finish(null, response.statusCode);
            response.destroy();
          }
        });
        response.on('end', () => finish(null, response.statusCode));
        response.on('error', (error) => finish(error));
        response.on('close', () => finish(new Error('the connection closed before the answer was complete')));
      },
    );
    const timer = setTimeout(() => {
      finish(new Error(`no complete answer within ${timeoutMs} ms`));
      request.destroy();
    }, timeoutMs);
    request.on('error', (error) => finish(error));
    request.end(body);
  });
}

/**
 * Delay before retrying after failed attempt `attempt` (1-based): exponential from `initialMs`, doubling, up
 * to `maxMs`, then "equal jitter" (half fixed, half random) so endpoints that failed together do not all
 * come back in the same instant.
 */
export function retryDelayMs(attempt: number, retry: { initialIntervalMs: number; maxIntervalMs: number }, random = Math.random): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 40);
  const base = Math.min(retry.maxIntervalMs, retry.initialIntervalMs * 2 ** exponent);
  return Math.max(1, Math.round(base / 2 + random() * (base / 2)));
}
