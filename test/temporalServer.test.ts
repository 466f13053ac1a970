import { randomUUID } from 'node:crypto';
import { EAGER_ACTIVITIES, SEARCH_ATTRIBUTES_REFRESH_ON_READ } from '../ops/devServer';
import { TEMPORAL_DYNAMIC_CONFIG } from '../ops/temporalServer';
import { connectTemporal } from '../src/platform/temporal';
import {
  AccountIdKey,
  OrganizationIdKey,
  SettlementDateKey,
  TransactionDirectionKey,
  TransactionStatusKey,
  TransferIdKey,
} from '../src/platform/searchAttributes';
import { eventually, testInfra } from './support/harness';

/**
 * The run's Temporal server: in the main project the dev server of `npm start`, in the cluster project
 * (jest.cluster.config.js) the server of `npm run cluster`, started fresh by globalSetup, which registered the
 * ledger's search attributes through the operator API after the server started.
 */
describe("the run's Temporal server", () => {
  test("npm run cluster's server leaves the search-attribute cache unforced, as Temporal ships it for production", () => {
    // Forced, every search-attribute read took a process-wide mutex and a round trip to Postgres (docs/reliability.md).
    expect(TEMPORAL_DYNAMIC_CONFIG).not.toHaveProperty(SEARCH_ATTRIBUTES_REFRESH_ON_READ);
  });

  test("npm run cluster's server hands a worker the activities its workflow task scheduled, as the dev server does", () => {
    // Off by default in the server; the dev server's effect is observed in test/metrics.test.ts (the SDK's
    // eager activity count).
    expect(TEMPORAL_DYNAMIC_CONFIG).toMatchObject({ [EAGER_ACTIVITIES]: true });
  });

  test('every search attribute of ours is accepted on a start, kept, and answers a visibility query', async () => {
    const { temporalAddress } = testInfra();
    const { connection, client } = await connectTemporal(temporalAddress, 'default');
    try {
      const keys = [OrganizationIdKey, AccountIdKey, TransactionStatusKey, TransactionDirectionKey, SettlementDateKey, TransferIdKey];
      const marker = `sa-${randomUUID()}`;
      const handle = await client.workflow.start('noSuchWorkflow', {
        taskQueue: `no-worker-${marker}`,
        workflowId: marker,
        typedSearchAttributes: keys.map((key) => ({ key, value: `${key.name}-${marker}` })),
      });
      try {
        const attributes = (await handle.describe()).typedSearchAttributes;
        expect(keys.map((key) => attributes.get(key))).toEqual(keys.map((key) => `${key.name}-${marker}`));
        // Visibility is written by a task of its own after the start: the query finds it once that has run.
        for (const key of keys) {
          const found = await eventually(
            async () => {
              const ids: string[] = [];
              for await (const each of client.workflow.list({ query: `${key.name} = '${key.name}-${marker}'` })) ids.push(each.workflowId);
              return ids.length > 0 ? ids : undefined;
            },
            30_000,
            `a visibility query by ${key.name}`,
          );
          expect(found).toEqual([marker]);
        }
      } finally {
        await handle.terminate('test done');
      }
    } finally {
      await connection.close();
    }
  });
});
