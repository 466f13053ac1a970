import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP receiver on localhost; `answer` picks each response's status from what arrived so far. */
export class Receiver {
  readonly requests: Received[] = [];
  /** A status to answer with, or 'hold' to leave the request hanging (until the receiver closes). */
  answer: (request: Received, received: Received[]) => number | 'hold' = () => 200;
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<Receiver> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const receiver = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const request = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        receiver.requests.push(request);
        const status = receiver.answer(
          request,
          receiver.requests.filter((r) => r.headers['webhook-id'] === request.headers['webhook-id']),
        );
        if (status === 'hold') return;
        res.statusCode = status;
        res.end('{}');
      });
    });
    return receiver;
  }

  for(eventId: string): Received[] {
    return this.requests.filter((request) => request.headers['webhook-id'] === eventId);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** What a receiver does (docs/webhooks.md): HMAC-SHA256 of "id.timestamp.body" keyed by the secret's bytes. */
export function signatureVerifies(secret: string, request: Received): boolean {
  const id = request.headers['webhook-id'] as string;
  const timestamp = request.headers['webhook-timestamp'] as string;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = Buffer.from(createHmac('sha256', key).update(`${id}.${timestamp}.${request.body}`).digest('base64'));
  return (request.headers['webhook-signature'] as string).split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    const given = Buffer.from(signature ?? '');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}
