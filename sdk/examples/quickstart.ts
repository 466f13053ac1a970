// The README's "Use it from TypeScript", as a file that runs (test/newcomer.test.ts and test/sdk.test.ts run it):
//   LEDGER_API_KEY=sk_sandbox_… LEDGER_URL=http://127.0.0.1:3000 npx tsx quickstart.ts
// It creates a user and a cash_in intent, walks the user's transactions, and receives the user.created
// webhook on a local server (the deployment must run the webhook dispatcher and reach this machine).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ledger, type WebhookEvent } from '@payments-ledger/sdk';

const ledger = new Ledger({ apiKey: process.env.LEDGER_API_KEY!, baseUrl: process.env.LEDGER_URL ?? 'http://127.0.0.1:3000' });

/** A one-shot receiver: resolves with the first delivery whose signature verifies. */
function receiveOneWebhook(secret: () => string): { url: Promise<string>; event: Promise<WebhookEvent> } {
  const server = http.createServer();
  const url = new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`)),
  );
  const event = new Promise<WebhookEvent>((resolve) => {
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        // Verify the raw body as received, never re-serialized JSON; throws WebhookVerificationError if forged.
        const verified = ledger.webhooks.verify(Buffer.concat(chunks), req.headers, secret());
        res.end();
        server.close();
        resolve(verified);
      });
    });
  });
  return { url, event };
}

async function main(): Promise<void> {
  let secret = '';
  const receiver = receiveOneWebhook(() => secret);
  const endpoint = await ledger.webhooks.create({ url: await receiver.url, events: ['user.created'] });
  secret = endpoint.secret;

  // Every POST gets an X-Idempotency-Key that its retries reuse.
  const user = await ledger.users.create({
    name: { first: 'Ada', last: 'Lovelace' },
    address: { address_line_1: '12 Market Street', locality: 'Newark', administrative_area: 'NJ', postal_code: '07102', country: 'US' },
    email: 'ada@example.com',
    date_of_birth: '1990-12-10',
    government_id: { type: 'passport', last4: '6789' },
    identity_verified: true,
  });
  const intent = await ledger.intents.create({ direction: 'cash_in', user_id: user.id, amount: 1250, currency: 'USD' });
  console.log(`intent ${intent.id} ${intent.status}`);
  for await (const transaction of ledger.transactions.list({ user_id: user.id })) {
    console.log(`transaction ${transaction.id} ${transaction.status} ${transaction.amount}`); // every page, fetched as the loop reaches it
  }

  const event = await receiver.event;
  if (event.type === 'user.created') console.log(`webhook ${event.type} ${event.data.id} ${event.data.status}`); // data typed by the event type
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
