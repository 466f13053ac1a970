-- Up Migration
-- Which transactions still wait for Temporal to accept their lifecycle workflow (SPEC §9: no accepted
-- transaction without its workflow), as rows of a table of their own instead of transactions.workflow_started_at.
-- Marking a start used to UPDATE the transaction row itself: a non-HOT update (the column is in a partial
-- index) that rewrote every index of the hottest table and fired all of its row and statement triggers
-- (transactions_ledger, the balance and transfer guards over their transition tables) for a change that is
-- no money movement at all. Now insertTransaction adds a row here in the statement that records the
-- transaction, and a confirmed start deletes it (batched, src/ledger/lifecycle.ts); the reconciler starts
-- the workflow of any row older than a few seconds.
CREATE TABLE transactions_awaiting_workflow (
  transaction_id text PRIMARY KEY REFERENCES transactions (id),
  created_at     timestamptz NOT NULL
);
CREATE INDEX transactions_awaiting_workflow_by_age ON transactions_awaiting_workflow (created_at);

INSERT INTO transactions_awaiting_workflow (transaction_id, created_at)
SELECT id, created_at FROM transactions WHERE workflow_started_at IS NULL;

DROP INDEX transactions_without_workflow;
COMMENT ON COLUMN transactions.workflow_started_at IS
  'No longer written (0012): a transaction awaiting its workflow has a row in transactions_awaiting_workflow. Kept for the rows recorded before.';

-- Down Migration
CREATE INDEX transactions_without_workflow ON transactions (created_at) WHERE workflow_started_at IS NULL;
UPDATE transactions t SET workflow_started_at = now()
 WHERE t.workflow_started_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM transactions_awaiting_workflow a WHERE a.transaction_id = t.id);
COMMENT ON COLUMN transactions.workflow_started_at IS NULL;
DROP TABLE transactions_awaiting_workflow;
