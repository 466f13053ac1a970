import { withTransaction, type Pool } from '../src/db/pool';
import type { ApiDeps } from '../src/http/app';
import type { Edge } from '../src/http/edge';
import { randomString } from '../src/ids';
import { createIntentBody } from '../src/ledger/schemas';
import { createIntent } from '../src/ledger/service';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { createTestUser } from '../test/support/harness';

/**
 * What the read benches (edge, sdk) read: an organization whose read limit is at its maximum (1,000,000 per
 * 60 s, so a bench measures admission work, not 429s) and one real cash_in transaction, written by the ledger's
 * own service; its workflow is never started (no worker there).
 */
export async function transactionToRead(pool: Pool, deps: ApiDeps, edge: Pick<Edge, 'lifecyclePoke'>) {
  const created = await createOrganization(pool, { name: 'Bench operator', kycRequired: true, environment: 'sandbox' });
  await setRateLimits(pool, created.organization.id, { read: 1_000_000 });
  const userId = await createTestUser(pool, created.organization.id);
  const intent = await withTransaction(pool, (db) =>
    createIntent(
      { db, organizationId: created.organization.id, now: new Date(), deps, lifecyclePoke: edge.lifecyclePoke },
      createIntentBody.parse({ direction: 'cash_in', user_id: userId, amount: 1250, currency: 'USD' }),
      { environment: 'sandbox', idempotencyKey: `bench-${randomString(8)}` },
    ),
  );
  return { created, transactionId: (intent.body as { transactions: { id: string }[] }).transactions[0]!.id };
}
