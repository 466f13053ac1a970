-- Up Migration
-- Lock order (docs/ach-returns.md): balances before return counts, everywhere. A transaction's statement-level
-- AFTER INSERT triggers fire in the order of their names, so transactions_ach_entries (0041), which queues a
-- deposit's debit and so takes its organization's return counts slot (0042, 0048), ran before
-- transactions_after_insert, which adds to the account's balance slot: counts, then balances. A return file's
-- transaction takes them the other way round (its dispute transactions' balances, then its applied rows' counts),
-- and so does a window's close (its members' balances, then its transfer's CCD debit), and both tables' slot is
-- the writing transaction's (balance_slot), so two such transactions meeting on a slot could each hold what the
-- other waited for: the simulation with the SFTP bank met it (a POST /intent/batch answered 503 "deadlock
-- detected"). Renamed so that it fires after the balances.
ALTER TRIGGER transactions_ach_entries ON transactions RENAME TO transactions_queue_ach_entries;

-- Down Migration
ALTER TRIGGER transactions_queue_ach_entries ON transactions RENAME TO transactions_ach_entries;
