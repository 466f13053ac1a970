import { DefaultLogger, Runtime } from '@temporalio/worker';

// Worker state changes at INFO would bury the test output; warnings and errors still show.
Runtime.install({ logger: new DefaultLogger('WARN') });
