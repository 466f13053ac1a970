/** Integration suites share one Postgres database and one Temporal dev server started by globalSetup. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The tests of whole topologies started as processes run in the processes project (jest.processes.config.js).
  testPathIgnorePatterns: ['/node_modules/', '\\.cluster\\.test\\.ts$'],
  transform: { '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] },
  // fast-check and a few others ship ESM only under some entry points; swc turns them into CommonJS.
  transformIgnorePatterns: ['/node_modules/(?!(fast-check|pure-rand)/)'],
  // The SDK's tests run its TypeScript source (its relative imports name the .js they compile to);
  // test/sdk.package.test.ts imports the built package the way a user does.
  moduleNameMapper: { '^@payments-ledger/sdk$': '<rootDir>/sdk/src/index.ts', '^(\\.{1,2}/.*)\\.js$': '$1' },
  setupFiles: ['<rootDir>/test/support/setupTemporalRuntime.ts'],
  globalSetup: '<rootDir>/test/support/globalSetup.ts',
  globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
  testSequencer: '<rootDir>/test/support/sequencer.js',
  testTimeout: 60_000,
  // Three suites at a time on two cores: a suite spends most of its time waiting on timers, servers and child
  // processes (with two, the cores were 36% idle and the project took 337–346 s; with three, 18% and 269 s).
  maxWorkers: 3,
};
