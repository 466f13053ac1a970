import type { Queryable } from '../db/pool';
import { seal } from '../sealed';
import { WEBHOOK_LIMITS } from './limits';
import { PLAIN_PREFIX } from './signing';
import { rowOf } from '../assert';

/**
 * Webhook secrets written in the clear before WEBHOOK_SECRET_KEY was configured: endpoints' `plain:`
 * secrets, and the stored idempotent answers of POST /webhook that showed one. Found by their stored form
 * alone (a sealed value starts with gcm1:), so a check needs no key.
 */

/** The stored answers that show a secret: those of the routes declaring `sealsAnswer`. */
export const ANSWERS_WITH_SECRETS = ['POST /webhook'];

export interface PlainSecrets {
  endpointIds: string[];
  answers: number;
}

export async function findPlainSecrets(db: Queryable): Promise<PlainSecrets> {
  const endpoints = await db.query<{ id: string }>(`SELECT id FROM webhook_endpoints WHERE starts_with(secret_sealed, $1) ORDER BY id`, [
    PLAIN_PREFIX,
  ]);
  const answers = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM idempotency_keys WHERE endpoint = ANY($1::text[]) AND NOT starts_with(response_body, 'gcm1:')`,
    [ANSWERS_WITH_SECRETS],
  );
  return { endpointIds: endpoints.rows.map((row) => row.id), answers: rowOf(answers.rows, 'count(*) answers one row').n };
}

/** Seals one batch of plain endpoint secrets; answers how many it sealed (0: none left). */
async function sealEndpointBatch(db: Queryable, keyBase64: string): Promise<number> {
  const { rows } = await db.query<{ id: string; secret_sealed: string }>(
    `SELECT id, secret_sealed FROM webhook_endpoints WHERE starts_with(secret_sealed, $1) ORDER BY id LIMIT $2`,
    [PLAIN_PREFIX, WEBHOOK_LIMITS.sealBatchMax],
  );
  if (rows.length === 0) return 0;
  // Compare-and-set on the plain value: a row deleted (secret erased) meanwhile stays as it now is.
  await db.query(
    `UPDATE webhook_endpoints w SET secret_sealed = s.sealed
       FROM unnest($1::text[], $2::text[], $3::text[]) AS s (id, plain, sealed)
      WHERE w.id = s.id AND w.secret_sealed = s.plain`,
    [
      rows.map((row) => row.id),
      rows.map((row) => row.secret_sealed),
      rows.map((row) => seal(row.secret_sealed.slice(PLAIN_PREFIX.length), keyBase64)),
    ],
  );
  return rows.length;
}

/** Seals one batch of plain stored answers, byte for byte as they were stored. */
async function sealAnswerBatch(db: Queryable, keyBase64: string): Promise<number> {
  const { rows } = await db.query<{ organization_id: string; scope: string; key: string; response_body: string }>(
    `SELECT organization_id, scope, key, response_body FROM idempotency_keys
      WHERE endpoint = ANY($1::text[]) AND NOT starts_with(response_body, 'gcm1:') LIMIT $2`,
    [ANSWERS_WITH_SECRETS, WEBHOOK_LIMITS.sealBatchMax],
  );
  if (rows.length === 0) return 0;
  await db.query(
    `UPDATE idempotency_keys i SET response_body = s.sealed
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS s (organization_id, scope, key, plain, sealed)
      WHERE (i.organization_id, i.scope, i.key) = (s.organization_id, s.scope, s.key) AND i.response_body = s.plain`,
    [
      rows.map((row) => row.organization_id),
      rows.map((row) => row.scope),
      rows.map((row) => row.key),
      rows.map((row) => row.response_body),
      rows.map((row) => seal(row.response_body, keyBase64)),
    ],
  );
  return rows.length;
}

/** Seals every plain secret, batch by batch, telling `progress` after each batch; answers the totals. */
export async function sealPlainSecrets(
  db: Queryable,
  keyBase64: string,
  progress: (line: string) => void,
): Promise<{ endpoints: number; answers: number }> {
  const sealed = { endpoints: 0, answers: 0 };
  for (const [kind, sealBatch] of [
    ['endpoints', sealEndpointBatch],
    ['answers', sealAnswerBatch],
  ] as const) {
    for (let count = await sealBatch(db, keyBase64); count > 0; count = await sealBatch(db, keyBase64)) {
      sealed[kind] += count;
      progress(`sealed ${sealed[kind]} ${kind === 'endpoints' ? 'endpoint secrets' : 'stored answers'} so far`);
    }
  }
  return sealed;
}
