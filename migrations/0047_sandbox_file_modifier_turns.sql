-- Up Migration
-- Issue 38: a sandbox ran out of File ID Modifiers. NACHA allows 36 files per file creation date (A–Z, 0–9),
-- which a production ODFI's few windows a day never reach; the sandbox's simulated bank builds a file every
-- SANDBOX_ACH_WINDOW_SECONDS (default 5) while payments come in, so an operator testing for three minutes used
-- the day's 36 and every bank-account payment after that stayed pending until the next Eastern day (found by
-- a seeded simulation). A sandbox file now takes the modifiers again in turns (A–9, then A–9 of turn 1, …);
-- production keeps one turn, and the database refuses any other.
ALTER TABLE ach_files ADD COLUMN environment text, ADD COLUMN modifier_turn integer NOT NULL DEFAULT 0;
-- A file's environment is its entries' (a window claims one environment's entries only).
UPDATE ach_files f
   SET environment = coalesce((SELECT e.environment FROM ach_entries e WHERE e.file_id = f.id LIMIT 1), 'production');
ALTER TABLE ach_files
  ALTER COLUMN environment SET NOT NULL,
  ADD CONSTRAINT ach_files_environment_check CHECK (environment IN ('sandbox', 'production')),
  ADD CONSTRAINT ach_files_modifier_turn_check CHECK (modifier_turn = 0 OR (environment = 'sandbox' AND modifier_turn > 0)),
  DROP CONSTRAINT ach_files_file_date_file_id_modifier_key,
  ADD CONSTRAINT ach_files_one_modifier UNIQUE (file_date, file_id_modifier, modifier_turn);

-- A built file never changes: its environment and turn neither.
CREATE OR REPLACE FUNCTION ach_files_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'ACH file %: a built file is never deleted', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.id <> OLD.id OR NEW.file_name <> OLD.file_name OR NEW.built_by <> OLD.built_by OR NEW.window_time IS DISTINCT FROM OLD.window_time
     OR NEW.file_date <> OLD.file_date OR NEW.file_id_modifier <> OLD.file_id_modifier
     OR NEW.environment <> OLD.environment OR NEW.modifier_turn <> OLD.modifier_turn
     OR NEW.bytes_sealed <> OLD.bytes_sealed OR NEW.sha256 <> OLD.sha256 OR NEW.entry_count <> OLD.entry_count
     OR NEW.total_debit_cents <> OLD.total_debit_cents OR NEW.total_credit_cents <> OLD.total_credit_cents
     OR NEW.settle_at <> OLD.settle_at OR NEW.created_at <> OLD.created_at
     OR (OLD.delivered_at IS NOT NULL AND NEW.delivered_at IS DISTINCT FROM OLD.delivered_at)
     OR (OLD.settled_at IS NOT NULL AND NEW.settled_at IS DISTINCT FROM OLD.settled_at) THEN
    RAISE EXCEPTION 'ACH file %: a built file never changes; only its status moves forward', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF array_position(ARRAY['built', 'delivered', 'settled'], NEW.status) < array_position(ARRAY['built', 'delivered', 'settled'], OLD.status) THEN
    RAISE EXCEPTION 'ACH file %: % cannot go back to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

-- Down Migration
-- Refused while a sandbox file of a later turn exists (its date and modifier are another file's).
CREATE OR REPLACE FUNCTION ach_files_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'ACH file %: a built file is never deleted', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.id <> OLD.id OR NEW.file_name <> OLD.file_name OR NEW.built_by <> OLD.built_by OR NEW.window_time IS DISTINCT FROM OLD.window_time
     OR NEW.file_date <> OLD.file_date OR NEW.file_id_modifier <> OLD.file_id_modifier
     OR NEW.bytes_sealed <> OLD.bytes_sealed OR NEW.sha256 <> OLD.sha256 OR NEW.entry_count <> OLD.entry_count
     OR NEW.total_debit_cents <> OLD.total_debit_cents OR NEW.total_credit_cents <> OLD.total_credit_cents
     OR NEW.settle_at <> OLD.settle_at OR NEW.created_at <> OLD.created_at
     OR (OLD.delivered_at IS NOT NULL AND NEW.delivered_at IS DISTINCT FROM OLD.delivered_at)
     OR (OLD.settled_at IS NOT NULL AND NEW.settled_at IS DISTINCT FROM OLD.settled_at) THEN
    RAISE EXCEPTION 'ACH file %: a built file never changes; only its status moves forward', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF array_position(ARRAY['built', 'delivered', 'settled'], NEW.status) < array_position(ARRAY['built', 'delivered', 'settled'], OLD.status) THEN
    RAISE EXCEPTION 'ACH file %: % cannot go back to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
ALTER TABLE ach_files
  DROP CONSTRAINT ach_files_one_modifier,
  ADD CONSTRAINT ach_files_file_date_file_id_modifier_key UNIQUE (file_date, file_id_modifier),
  DROP COLUMN modifier_turn,
  DROP COLUMN environment;
