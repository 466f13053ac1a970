/**
 * `npm run test:quick`: the suites a developer runs while working — the pure logic (calendar, dates, NACHA files, the
 * schema snapshot, the compose file against the code), the replay of recorded workflow histories, and the
 * suites that run on one in-process api + worker stack (input hardening, tokens, refunds, the journal, metadata,
 * events), and the function-length rule. Same real Postgres
 * and Temporal dev server as `npm test`. Left out, for `npm test`: suites that start whole processes (npm
 * start from a clone, api and worker processes, several edges, killed workers), the chaos and load-shaped
 * suites, and the cluster and processes projects.
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  displayName: 'quick',
  testMatch: [
    '**/calendar.test.ts',
    '**/ledger.dates.test.ts',
    '**/schema.test.ts',
    '**/compose.test.ts',
    '**/ledger.replay.test.ts',
    '**/settlement.replay.test.ts',
    '**/input.test.ts',
    '**/tokens.test.ts',
    '**/refunds.test.ts',
    '**/functionLength.test.ts',
    '**/journal.test.ts',
    '**/metadata.test.ts',
    '**/events.test.ts',
    '**/ach.files.test.ts',
    '**/ach.parse.test.ts',
  ],
};
