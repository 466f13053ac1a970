-- Up Migration
-- SPEC §25 return rates: a file's returns are counted once per statement, not once per row (issue 34). The
-- applied rows of a file are inserted in one statement (src/ach/returnsBatch.ts), and 0042's row trigger moved
-- the same (organization, day) counter once per return: a file of 10,000 returns of one day's debits updated one
-- row 10,000 times in one transaction, each update walking the chain of the versions before it (4.6 s of a
-- 10,000-entry file's apply). The counts are the same: per organization and UTC day of the debit's creation, the
-- returned debits (27, 37) of the statement, by category, added in one upsert per day, days in order.
DROP TRIGGER ach_entry_returns_count ON ach_entry_returns;
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
CREATE TRIGGER ach_entry_returns_count AFTER INSERT ON ach_entry_returns REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ach_entry_returns_count();

-- Down Migration
DROP TRIGGER ach_entry_returns_count ON ach_entry_returns;
CREATE OR REPLACE FUNCTION ach_entry_returns_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  e ach_entries;
BEGIN
  SELECT * INTO e FROM ach_entries WHERE id = NEW.entry_id;
  IF NEW.addenda_type <> '99' OR e.transaction_code NOT IN (27, 37) THEN
    RETURN NULL;
  END IF;
  INSERT INTO ach_return_counts AS c (organization_id, day, returned, unauthorized, administrative)
  VALUES (e.organization_id, (e.created_at AT TIME ZONE 'UTC')::date, 1,
          (NEW.code IN ('R05', 'R07', 'R10', 'R11', 'R29', 'R51'))::int, (NEW.code IN ('R02', 'R03', 'R04'))::int)
  ON CONFLICT (organization_id, day) DO UPDATE SET returned = c.returned + 1, unauthorized = c.unauthorized + EXCLUDED.unauthorized,
    administrative = c.administrative + EXCLUDED.administrative;
  RETURN NULL;
END $$;
CREATE TRIGGER ach_entry_returns_count AFTER INSERT ON ach_entry_returns FOR EACH ROW EXECUTE FUNCTION ach_entry_returns_count();
