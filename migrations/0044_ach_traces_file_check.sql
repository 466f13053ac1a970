-- Up Migration
-- SPEC §24: trace numbers come round after 9,999,999; a file's wholeness is checked once per file, not once per entry.
--
-- Trace numbers past the 7th digit (docs/ach.md, "Trace numbers"). A trace number is the ODFI's 8
-- routing digits and a 7-digit sequence: 9,999,999 per ODFI. The NACHA Rules ask it to be unique within its
-- file (banks: within the day); we keep it unique for as long as its entry can still be returned (a return
-- names its entry by trace number alone), and only then may the sequence come round to it again:
-- - the sequence cycles (0041 made it NO CYCLE: after 9,999,999 entries every build would have failed);
-- - an entry takes a trace number only if no entry holding the same one has an effective date less than
--   ach_trace_reuse_days() ago (the build skips held numbers; this trigger refuses anything else);
-- - within a file, a trace number is unique outright.
ALTER SEQUENCE ach_trace_sequence CYCLE;

-- Unauthorized consumer returns (R05, R07, R10, R11, R29, R51) come up to 60 days after settlement; twice
-- that is kept, so a late return (R31 by agreement) still finds its one entry.
CREATE FUNCTION ach_trace_reuse_days() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 120';

ALTER TABLE ach_entries DROP CONSTRAINT ach_entries_trace_number_key;
ALTER TABLE ach_entries ADD CONSTRAINT ach_entries_trace_in_file UNIQUE (file_id, trace_number);
-- Returns and the build's check look trace numbers up, newest effective date first.
CREATE INDEX ach_entries_by_trace ON ach_entries (trace_number, effective_date DESC) WHERE trace_number IS NOT NULL;

CREATE FUNCTION ach_entries_trace_free() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  holder record;
BEGIN
  SELECT id, effective_date INTO holder FROM ach_entries
   WHERE trace_number = NEW.trace_number AND id <> NEW.id AND effective_date > NEW.effective_date - ach_trace_reuse_days()
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'ACH entry %: trace number % is held by entry % (effective %), which can still be returned', NEW.id,
      NEW.trace_number, holder.id, holder.effective_date USING ERRCODE = 'unique_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ach_entries_trace_free BEFORE UPDATE OF trace_number ON ach_entries
  FOR EACH ROW WHEN (OLD.trace_number IS NULL AND NEW.trace_number IS NOT NULL) EXECUTE FUNCTION ach_entries_trace_free();

-- A file's wholeness (0041's ach_entries_file_whole) is checked at commit by each entry moved into it, and each
-- check counted the whole file: n² rows read for a file of n entries (10,000 entries: 10^8), all in the
-- build's transaction, on the database the api writes to. The first check of a file in a transaction now
-- checks it for all: the deferred checks run after every statement, so that one sees what the others would.
CREATE OR REPLACE FUNCTION ach_entries_file_whole() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  file ach_files;
  counted bigint;
  debits bigint;
  credits bigint;
  checked constant text := 'ach_file_whole.' || NEW.file_id;
BEGIN
  IF current_setting(checked, true) = 'checked' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config(checked, 'checked', true);
  SELECT * INTO file FROM ach_files WHERE id = NEW.file_id;
  SELECT count(*), coalesce(sum(amount_cents) FILTER (WHERE transaction_code IN (27, 37)), 0),
         coalesce(sum(amount_cents) FILTER (WHERE transaction_code IN (22, 32)), 0)
    INTO counted, debits, credits FROM ach_entries WHERE file_id = NEW.file_id;
  IF counted <> file.entry_count OR debits <> file.total_debit_cents OR credits <> file.total_credit_cents THEN
    RAISE EXCEPTION 'ACH file %: built with % entries (debits %, credits %), holds % (debits %, credits %)', file.id,
      file.entry_count, file.total_debit_cents, file.total_credit_cents, counted, debits, credits USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION ach_entries_file_whole() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  file ach_files;
  counted bigint;
  debits bigint;
  credits bigint;
BEGIN
  SELECT * INTO file FROM ach_files WHERE id = NEW.file_id;
  SELECT count(*), coalesce(sum(amount_cents) FILTER (WHERE transaction_code IN (27, 37)), 0),
         coalesce(sum(amount_cents) FILTER (WHERE transaction_code IN (22, 32)), 0)
    INTO counted, debits, credits FROM ach_entries WHERE file_id = NEW.file_id;
  IF counted <> file.entry_count OR debits <> file.total_debit_cents OR credits <> file.total_credit_cents THEN
    RAISE EXCEPTION 'ACH file %: built with % entries (debits %, credits %), holds % (debits %, credits %)', file.id,
      file.entry_count, file.total_debit_cents, file.total_credit_cents, counted, debits, credits USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER ach_entries_trace_free ON ach_entries;
DROP FUNCTION ach_entries_trace_free();
DROP INDEX ach_entries_by_trace;
ALTER TABLE ach_entries DROP CONSTRAINT ach_entries_trace_in_file;
ALTER TABLE ach_entries ADD CONSTRAINT ach_entries_trace_number_key UNIQUE (trace_number);
DROP FUNCTION ach_trace_reuse_days();
ALTER SEQUENCE ach_trace_sequence NO CYCLE;
