/**
 * The cluster project (part of `npm test`): the lifecycle, settlement and webhook suites again, and the tests
 * of the production topology itself, against the Temporal server `npm run cluster` runs (built from the Go
 * module proxy, persistence and visibility on Postgres, 4 history shards) instead of the dev server.
 */
const base = require('./jest.config');

process.env.LEDGER_TEST_TEMPORAL = 'cluster';

module.exports = {
  ...base,
  displayName: 'cluster',
  testPathIgnorePatterns: ['/node_modules/'],
  // One suite at a time: the topology tests run whole clusters (a Temporal server of their own, api and worker
  // processes) on the machine's Postgres, whose 100 connections two such suites at once would exceed.
  maxWorkers: 1,
  testMatch: ['**/ledger.test.ts', '**/settlement.test.ts', '**/webhooks.test.ts', '**/*.cluster.test.ts'],
};
