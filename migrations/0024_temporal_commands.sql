-- Up Migration
-- Issue 32, one road to Temporal: every workflow start or signal that a write needs, beside the lifecycle
-- queue's (0023), is a row written in the write's own database transaction and handed to Temporal by the
-- worker processes' drainer (src/ledger/lifecycleDrainer.ts), never by the request. A rolled-back write
-- leaves no command; a committed one is delivered whenever Temporal answers. Writing: enqueueTemporalCommand
-- (src/platform/temporalCommands.ts; docs/temporal-road.md). The lifecycle queue keeps its own table: its
-- start rows are written by the statement that records a transaction (the intake's hot path).
CREATE TABLE temporal_commands (
  id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind                text NOT NULL CHECK (kind IN ('start', 'signal', 'signal_with_start')),
  workflow_id         text NOT NULL,
  -- The workflow to start (start, signal_with_start), its task queue and what it is started with.
  workflow_type       text,
  workflow_task_queue text,
  args                jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(args) = 'array'),
  id_reuse_policy     text CHECK (id_reuse_policy IN ('reject_duplicate', 'allow_duplicate', 'allow_duplicate_failed_only')),
  -- Keyword search attributes by name, and the memo.
  search_attributes   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(search_attributes) = 'object'),
  memo                jsonb,
  summary             text,
  -- The signal (signal, signal_with_start) and its arguments.
  signal_name         text,
  signal_args         jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(signal_args) = 'array'),
  -- The deployment's task queue: its drainers deliver the row.
  drain_queue         text NOT NULL,
  created_at          timestamptz NOT NULL,
  attempts            integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- A row Temporal refused waits until then (backoff), like the lifecycle queue's.
  next_attempt_at     timestamptz NOT NULL DEFAULT '-infinity',
  CHECK (kind = 'signal' OR (workflow_type IS NOT NULL AND workflow_task_queue IS NOT NULL AND id_reuse_policy IS NOT NULL)),
  CHECK (kind = 'start' OR signal_name IS NOT NULL)
);
-- The drainers' claim: a queue's rows in creation order.
CREATE INDEX temporal_commands_by_queue ON temporal_commands (drain_queue, id);
-- Commands of one workflow go one at a time, in order: the claim takes only a workflow's oldest row.
CREATE INDEX temporal_commands_by_workflow ON temporal_commands (workflow_id, id);

-- Down Migration
DROP TABLE temporal_commands;
