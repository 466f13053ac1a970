import { randomInt } from 'node:crypto';
import http from 'node:http';
import { randomString } from '../src/ids';

/**
 * The benches' load client: node:http on kept-alive connections, not fetch. The load shares the box's two
 * cores with what it measures, and fetch spent 1.7 ms of CPU per POST /intent against node:http's 0.8–1.0
 * (the same 3,000 POSTs from 32 clients, each way twice); the bare loops' client is Temporal's native one,
 * its lightest too. One agent per bench process; `maxSockets` bounds the connections per api.
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

export interface JsonAnswer {
  status: number;
  /** The answer's body as text (JSON for every route the benches load). */
  text: string;
}

/** POSTs `body` as JSON to `url` with `headers`; resolves with the status and body once the answer has ended. */
export function postJson(url: string, headers: Record<string, string>, body: unknown): Promise<JsonAnswer> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** Closes the kept-alive connections, so that they do not hold the bench process open after its run. */
export function closeConnections(): void {
  agent.destroy();
}

/** GETs `url` with `headers`; resolves with the status and body once the answer has ended. */
export function getJson(url: string, headers: Record<string, string>): Promise<JsonAnswer> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'GET', agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    request.on('error', reject);
    request.end();
  });
}

/**
 * A bank account of `userId` made as an operator makes one (SPEC §24): POST /token with a sandbox account, then
 * POST /authorize spending it (a $1 cash_in). Answers the bank account's id.
 */
export async function makeBankAccount(apiUrl: string, apiKey: string, userId: string): Promise<string> {
  const auth = { Authorization: `Bearer ${apiKey}` };
  const token = await postJson(
    `${apiUrl}/token`,
    { ...auth, 'X-Idempotency-Key': `t-${randomString(16)}` },
    {
      user_id: userId,
      bank_account: { routing_number: '110000000', account_number: `7${randomInt(1_000_000_000)}` },
    },
  );
  if (token.status !== 200) throw new Error(`POST /token: ${token.status} ${token.text}`);
  const authorized = await postJson(`${apiUrl}/authorize`, auth, {
    token: (JSON.parse(token.text) as { id: string }).id,
    amount: 100,
    currency: 'USD',
    direction: 'cash_in',
  });
  if (authorized.status !== 200) throw new Error(`POST /authorize: ${authorized.status} ${authorized.text}`);
  return (JSON.parse(authorized.text) as { bank_account_id: string }).bank_account_id;
}
