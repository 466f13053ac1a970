-- Up Migration
-- SPEC §20: the durable queue between a committed write and Temporal. Every recorded transaction gets a
-- `start` row in the statement that records it (insertTransaction), and a sandbox confirmation a
-- `confirm_funds` row in its request's transaction; the worker processes drain the rows in creation order
-- (id) with FOR UPDATE SKIP LOCKED (src/ledger/lifecycle.ts), so no write waits on Temporal and nothing
-- accepted is lost while Temporal is down. Replaces transactions_awaiting_workflow (0012), whose rows move here.
CREATE TABLE lifecycle_queue (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id  text NOT NULL REFERENCES transactions (id),
  kind            text NOT NULL CHECK (kind IN ('start', 'confirm_funds')),
  -- The task queue of the deployment that recorded the row; NULL (rows moved from 0012) is any drainer's.
  task_queue      text,
  created_at      timestamptz NOT NULL,
  attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- A row whose start failed waits until then (backoff), so one failing row does not spin its drainer.
  next_attempt_at timestamptz NOT NULL DEFAULT '-infinity'
);
-- A transaction is started once: at most one start row each.
CREATE UNIQUE INDEX lifecycle_queue_one_start ON lifecycle_queue (transaction_id) WHERE kind = 'start';

INSERT INTO lifecycle_queue (transaction_id, kind, task_queue, created_at)
SELECT transaction_id, 'start', NULL, created_at FROM transactions_awaiting_workflow ORDER BY created_at, transaction_id;
DROP TABLE transactions_awaiting_workflow;

-- Down Migration
CREATE TABLE transactions_awaiting_workflow (
  transaction_id text PRIMARY KEY REFERENCES transactions (id),
  created_at     timestamptz NOT NULL
);
CREATE INDEX transactions_awaiting_workflow_by_age ON transactions_awaiting_workflow (created_at);
INSERT INTO transactions_awaiting_workflow (transaction_id, created_at)
SELECT transaction_id, created_at FROM lifecycle_queue WHERE kind = 'start';
DROP TABLE lifecycle_queue;
