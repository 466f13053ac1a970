/**
 * The Temporal releases the ledger runs on, in one place: `npm start` (the CLI's dev server), `npm run
 * cluster` (the server and the Web UI built from the Go module proxy), docker-compose.yml and the Dockerfile
 * all name these, and test/compose.test.ts checks that they agree.
 */
export const TEMPORAL_VERSIONS = {
  /** The CLI (dev server for `npm start` and the tests); it bundles server 1.29.1 and UI 2.42.1. */
  cli: '1.5.1',
  /** The server of `npm run cluster` and of docker-compose (temporalio/server, temporalio/admin-tools). */
  server: '1.29.1',
  /** The Web UI of `npm run cluster` and of docker-compose (temporalio/ui). */
  ui: '2.42.1',
  /**
   * The newest schema versions shipped in go.temporal.io/server@v1.29.1 under schema/postgresql/v12: the
   * SQL tool brings a database up to these, and a server of that release expects them.
   */
  postgresSchema: { temporal: '1.18', visibility: '1.9' },
} as const;

/** `go install` targets; none of these tags has `replace` directives, so the module proxy builds them. */
export const TEMPORAL_GO_MODULES = {
  cli: `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_VERSIONS.cli}`,
  server: `go.temporal.io/server/cmd/server@v${TEMPORAL_VERSIONS.server}`,
  sqlTool: `go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_VERSIONS.server}`,
  ui: `github.com/temporalio/ui-server/v2/cmd/server@v${TEMPORAL_VERSIONS.ui}`,
} as const;
