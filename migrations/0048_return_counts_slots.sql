-- Up Migration
-- Issue 37: every payment with a bank account queues its ACH entry in the statement that records its transaction
-- (0041), and 0042's trigger counted the debit on the one ach_return_counts row of its organization and day: that
-- row stayed locked until the recording transaction committed, so an organization's bank-account intents were
-- approved one after the other, whichever users they were for. The counts are now kept in 16 slots per
-- organization and day, as the balances are (0005's balance_slot: by the writing transaction), and every read
-- sums them (src/ach/returnRates.ts reads sums already). Two writers meet on a slot one time in 16.
ALTER TABLE ach_return_counts ADD COLUMN slot smallint NOT NULL DEFAULT 0 CHECK (slot BETWEEN 0 AND 15);
ALTER TABLE ach_return_counts DROP CONSTRAINT ach_return_counts_pkey, ADD PRIMARY KEY (organization_id, day, slot);
ALTER TABLE ach_return_counts ALTER COLUMN slot DROP DEFAULT;

CREATE OR REPLACE FUNCTION ach_entries_count_debits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_return_counts AS c (organization_id, day, slot, debits)
  SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date, balance_slot(), count(*) FROM new_rows WHERE transaction_code IN (27, 37)
   GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (organization_id, day, slot) DO UPDATE SET debits = c.debits + EXCLUDED.debits;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION ach_entry_returns_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_return_counts AS c (organization_id, day, slot, returned, unauthorized, administrative)
  SELECT e.organization_id, (e.created_at AT TIME ZONE 'UTC')::date, balance_slot(), count(*),
         count(*) FILTER (WHERE n.code IN ('R05', 'R07', 'R10', 'R11', 'R29', 'R51')),
         count(*) FILTER (WHERE n.code IN ('R02', 'R03', 'R04'))
    FROM new_rows n JOIN ach_entries e ON e.id = n.entry_id
   WHERE n.addenda_type = '99' AND e.transaction_code IN (27, 37)
   GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (organization_id, day, slot) DO UPDATE SET returned = c.returned + EXCLUDED.returned,
    unauthorized = c.unauthorized + EXCLUDED.unauthorized, administrative = c.administrative + EXCLUDED.administrative;
  RETURN NULL;
END $$;

-- Down Migration
-- The slots of each organization and day summed into one row again, and the key and triggers without the slot.
CREATE TEMPORARY TABLE ach_return_counts_summed ON COMMIT DROP AS
  SELECT organization_id, day, sum(debits)::integer AS debits, sum(returned)::integer AS returned,
         sum(unauthorized)::integer AS unauthorized, sum(administrative)::integer AS administrative
    FROM ach_return_counts GROUP BY 1, 2;
DELETE FROM ach_return_counts;
ALTER TABLE ach_return_counts DROP CONSTRAINT ach_return_counts_pkey, DROP COLUMN slot, ADD PRIMARY KEY (organization_id, day);
INSERT INTO ach_return_counts (organization_id, day, debits, returned, unauthorized, administrative)
  SELECT organization_id, day, debits, returned, unauthorized, administrative FROM ach_return_counts_summed;
CREATE OR REPLACE FUNCTION ach_entries_count_debits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_return_counts (organization_id, day, debits)
  SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date, count(*) FROM new_rows WHERE transaction_code IN (27, 37)
   GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (organization_id, day) DO UPDATE SET debits = ach_return_counts.debits + EXCLUDED.debits;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION ach_entry_returns_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_return_counts AS c (organization_id, day, returned, unauthorized, administrative)
  SELECT e.organization_id, (e.created_at AT TIME ZONE 'UTC')::date, count(*),
         count(*) FILTER (WHERE n.code IN ('R05', 'R07', 'R10', 'R11', 'R29', 'R51')),
         count(*) FILTER (WHERE n.code IN ('R02', 'R03', 'R04'))
    FROM new_rows n JOIN ach_entries e ON e.id = n.entry_id
   WHERE n.addenda_type = '99' AND e.transaction_code IN (27, 37)
   GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (organization_id, day) DO UPDATE SET returned = c.returned + EXCLUDED.returned,
    unauthorized = c.unauthorized + EXCLUDED.unauthorized, administrative = c.administrative + EXCLUDED.administrative;
  RETURN NULL;
END $$;
