import { execFile } from 'node:child_process';
import path from 'node:path';
import { randomString } from '../../src/ids';
import type { Stack } from './harness';
import { eventually, testInfra, type ApiResponse } from './harness';

/** Helpers shared by the suites that make payments (users, intents, refunds, disputes, tokens). */

type Call = <T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<ApiResponse<T>>;

export type Body = Record<string, any>;

/** A valid POST /user body with a fresh tag; `patch` edits it (delete a member to leave it out). */
export function userBody(patch: (body: Body) => void = () => undefined): Body {
  const body: Body = {
    name: { first: 'Ada', last: 'Lovelace' },
    address: { address_line_1: '12 Market Street', locality: 'Newark', administrative_area: 'NJ', postal_code: '07102', country: 'US' },
    email: 'ada@example.com',
    date_of_birth: '1990-12-10',
    government_id: { type: 'passport', last4: '6789' },
    identity_verified: true,
    tag: `tag-${randomString(16)}`,
  };
  patch(body);
  return body;
}

export const idempotencyKey = () => ({ 'X-Idempotency-Key': `k-${randomString(16)}` });

/** An approved cash_in intent (automatic approval) of `amountCents` for `userId`. */
export async function approvedCashIn(call: Call, userId: string, amountCents: number) {
  const response = await call(
    'POST',
    '/intent',
    { direction: 'cash_in', user_id: userId, amount: amountCents, currency: 'USD' },
    idempotencyKey(),
  );
  if (response.status !== 200 || response.body.status !== 'approved')
    throw new Error(`intent not approved: ${response.status} ${response.text}`);
  return response.body as { id: string; account_id: string; amount: number; transactions: { id: string }[] };
}

/** A routing number the sandbox names ('Sandbox Test Bank'); it passes the ABA checksum. */
export const SANDBOX_ROUTING = '110000000';

/**
 * A bank account of `userId` (SPEC §24), made as an operator makes one: POST /token with the account, then
 * POST /authorize spending it (a cash_in of `amountCents`). Answers the bank account id and that intent.
 */
export async function addBankAccount(
  call: Call,
  userId: string,
  account: { routing_number?: string; account_number: string; account_type?: 'checking' | 'savings' },
  amountCents = 100,
) {
  const token = await call(
    'POST',
    '/token',
    { user_id: userId, bank_account: { routing_number: SANDBOX_ROUTING, ...account } },
    idempotencyKey(),
  );
  if (token.status !== 200) throw new Error(`token not made: ${token.status} ${token.text}`);
  const authorized = await call('POST', '/authorize', { token: token.body.id, amount: amountCents, currency: 'USD', direction: 'cash_in' });
  if (authorized.status !== 200 || typeof authorized.body.bank_account_id !== 'string')
    throw new Error(`authorization made no bank account: ${authorized.status} ${authorized.text}`);
  return { bankAccountId: authorized.body.bank_account_id as string, intent: authorized.body as Body, tokenId: token.body.id as string };
}

/** Waits until GET /transaction/{id} answers `status`, and returns that answer. */
export async function statusOf(call: Call, transactionId: string, status: string) {
  return eventually(
    async () => {
      const response = await call('GET', `/transaction/${transactionId}`);
      return response.body.status === status ? response.body : undefined;
    },
    30_000,
    `${transactionId} to become ${status}`,
  );
}

/** Waits until the transaction's lifecycle workflow runs on Temporal (workflow id = transaction id). */
export async function workflowRunning(stack: Stack, transactionId: string): Promise<void> {
  await eventually(
    async () => {
      const description = await stack.temporal.workflow.getHandle(transactionId).describe();
      return description.status.name === 'RUNNING' ? true : undefined;
    },
    30_000,
    `workflow ${transactionId} running`,
  );
}

/** Events of one type about one object id, from the outbox. */
export async function eventsAbout(stack: Stack, organizationId: string, type: string, id: string): Promise<unknown[]> {
  const { rows } = await stack.pool.query<{ data: unknown }>(
    `SELECT data FROM events WHERE organization_id = $1 AND type = $2 AND data->>'id' = $3 ORDER BY seq`,
    [organizationId, type, id],
  );
  return rows.map((row) => row.data);
}

/** Runs the operator CLI against the test database (or a suite's own: `stack.config.DATABASE_URL`). */
export function admin(
  args: string[],
  databaseUrl = testInfra().databaseUrl,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const root = path.resolve(__dirname, '..', '..');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['scripts/admin.js', ...args],
      {
        cwd: root,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...env },
        timeout: 60_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
