import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Rng } from './rng';

/**
 * The integrator's webhook endpoint. While `faulty`, it answers some deliveries 500 and holds others past the
 * service's 15 s attempt timeout (answered only after), as receivers in the field do; then it answers every
 * delivery 200. It keeps every body it received by event id, checks each signature, and counts as delivered
 * only an event it answered 2xx in time.
 */
export interface Delivery {
  bodies: Set<string>;
  attempts: number;
  delivered: boolean;
}

export interface Receiver {
  url: string;
  deliveries: Map<string, Delivery>;
  badSignatures: number;
  faulty: boolean;
  secret: string;
  close(): Promise<void>;
}

const HOLD_MS = 16_500;

function verified(secret: string, headers: http.IncomingHttpHeaders, body: string): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = String(headers['webhook-signature'] ?? '').split(' ');
  if (typeof id !== 'string' || typeof timestamp !== 'string' || !secret.startsWith('whsec_')) return false;
  const expected = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${id}.${timestamp}.${body}`)
    .digest();
  return signatures.some((signature) => {
    const given = Buffer.from(signature.replace(/^v1,/, ''), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export async function startReceiver(rng: Rng): Promise<Receiver> {
  const pending = new Set<NodeJS.Timeout>();
  const receiver: Receiver = { url: '', deliveries: new Map(), badSignatures: 0, faulty: true, secret: '', close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? 'missing');
      if (!verified(receiver.secret, req.headers, body)) receiver.badSignatures += 1;
      const delivery = receiver.deliveries.get(id) ?? { bodies: new Set<string>(), attempts: 0, delivered: false };
      receiver.deliveries.set(id, delivery);
      delivery.bodies.add(body);
      delivery.attempts += 1;
      const roll = receiver.faulty ? rng.next() : 1;
      if (roll < 0.12) {
        res.statusCode = 500;
        res.end('receiver failing');
      } else if (roll < 0.17) {
        const timer = setTimeout(() => {
          pending.delete(timer);
          res.end('late');
        }, HOLD_MS);
        pending.add(timer);
      } else {
        delivery.delivered = true;
        res.end('ok');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  receiver.close = async () => {
    for (const timer of pending) clearTimeout(timer);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return receiver;
}
