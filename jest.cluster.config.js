/**
 * The cluster project (part of `npm test`): the lifecycle, settlement and webhook suites again, and the server's
 * own checks (temporalServer.test.ts), against the
 * Temporal server `npm run cluster` runs (built from the Go module proxy, persistence and visibility on
 * Postgres, 4 history shards) instead of the dev server. The tests of whole topologies started as processes
 * (`*.cluster.test.ts`) are the processes project (jest.processes.config.js).
 */
const base = require('./jest.config');

process.env.LEDGER_TEST_TEMPORAL = 'cluster';

module.exports = {
  ...base,
  displayName: 'cluster',
  // One suite at a time: `npm test` runs this project beside the main one, on the machine's Postgres (100
  // connections): the server's pools (30) and the main project's three suites (~36 at their peak) leave room
  // for one suite's stack here.
  maxWorkers: 1,
  testMatch: ['**/ledger.test.ts', '**/settlement.test.ts', '**/webhooks.test.ts', '**/temporalServer.test.ts'],
};
