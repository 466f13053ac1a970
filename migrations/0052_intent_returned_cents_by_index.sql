-- Up Migration
-- What has left an intent (intent_returned_cents, 0045) is read through the intent's indexes on refunds and
-- disputes, whatever size the planner believes those tables are. A return file's disputes are inserted by one
-- statement (src/ach/returnsBatch.ts through src/disputes/repo.ts insertDisputes), and the draw guard (0045)
-- reads the sum for every row that statement inserts. The plan of that read is made once, when the statement
-- starts: on a disputes table that is then small (an operator's first returns, or a file far larger than the
-- table), a scan of the whole table is the cheaper plan, and the same statement then scans every row it has
-- added so far, once per row — quadratic in the file's size (5,000 rows through a guard of this shape: 2.2 s
-- and 12,497,500 rows read by scans, against 0.13 s and none with the index forced;
-- bench/results/2026-11-29-returns-first-file.md).
-- The setting only makes a scan the planner's last resort; the function reads the same rows.
ALTER FUNCTION intent_returned_cents(text) SET enable_seqscan = off;

-- Down Migration
ALTER FUNCTION intent_returned_cents(text) RESET enable_seqscan;
