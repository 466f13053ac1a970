'use strict';
/**
 * Longest suites first, so no long suite starts last and leaves the other workers idle at the end of the run.
 * Jest orders by the durations of the machine's last run (its cache); a fresh clone (CI) has none and would
 * order by file size, which put test/ach.chaos.test.ts (136 s, a mid-sized file) last. So a suite the cache
 * has not timed takes its seconds from SECONDS: the suites over 20 s in a quiet-box run of 2026-11-27
 * (bench/results/2026-11-27-test-suite.md). Suites in neither run after these, the larger file first (Jest's
 * own sort runs a suite it has no time for before every timed one).
 */
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const SECONDS = {
  'ach.chaos.test.ts': 136,
  'topology.cluster.test.ts': 157,
  'simulate.cluster.test.ts': 133,
  'newcomer.test.ts': 81,
  'settlement.test.ts': 51,
  'platform.test.ts': 34,
  'webhooks.test.ts': 31,
  'console.test.ts': 26,
  'ach.rail.test.ts': 26,
  'settlement.calendar.test.ts': 25,
  'sdk.package.test.ts': 24,
  'limits.test.ts': 23,
  'webhookReplay.test.ts': 23,
  'ach.returns.test.ts': 20,
};

class LongestFirst extends Sequencer {
  /** Failed last run first (Jest's own rule), then the longest, then the larger file. */
  sort(tests) {
    const key = (test) => {
      const cached = super.time(test);
      return cached ?? (SECONDS[path.basename(test.path)] ?? 0) * 1000;
    };
    const size = (test) => test.context.hasteFS.getSize(test.path) ?? 0;
    const order = tests.map((test) => ({ test, failed: this.hasFailed(test), ms: key(test), bytes: size(test) }));
    order.sort((a, b) => Number(b.failed) - Number(a.failed) || b.ms - a.ms || b.bytes - a.bytes);
    return order.map(({ test, ms }) => Object.assign(test, { duration: ms || undefined }));
  }
}

module.exports = LongestFirst;
