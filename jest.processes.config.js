/**
 * The processes project (part of `npm test`): the suites that run whole topologies as operators do, each
 * started in processes of its own on its own embedded Postgres — `npm run cluster` (test/topology.cluster.test.ts:
 * the Temporal server, api and worker processes, warm spares, SIGKILLs) and `npm run simulate`
 * (test/simulate.cluster.test.ts: seeded faults against `npm start`). They need neither the run's database nor
 * its Temporal server, so there is no globalSetup; each keeps the machine's two cores busy on its own, so they
 * run one at a time, after the other projects (scripts/test.js).
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  displayName: 'processes',
  testPathIgnorePatterns: ['/node_modules/'],
  testMatch: ['**/*.cluster.test.ts'],
  globalSetup: undefined,
  globalTeardown: undefined,
  maxWorkers: 1,
};
