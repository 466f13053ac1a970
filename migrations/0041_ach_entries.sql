-- Up Migration
-- SPEC §24 the ACH rail's records (docs/ach.md, "Entries" and "Windows"). An entry is one payment the bank
-- (the ODFI) originates; a file is one NACHA file of a window. Both invariants the rail rests on live here,
-- not in the code that writes them: an entry joins at most one file, ever, and a file never changes once
-- built (its bytes, name and totals are what the bank received).

-- Trace numbers' 7-digit sequence after the ODFI's 8 routing digits: unique forever. NO CYCLE: after
-- 9,999,999 entries nextval fails rather than reuse a trace number the bank already saw.
CREATE SEQUENCE ach_trace_sequence MINVALUE 1 MAXVALUE 9999999 NO CYCLE;

CREATE TABLE ach_files (
  id                 text PRIMARY KEY DEFAULT ('achf_' || replace(gen_random_uuid()::text, '-', '')) CHECK (id ~ '^achf_[0-9a-f]{32}$'),
  file_name          text NOT NULL UNIQUE CHECK (file_name ~ '^[A-Za-z0-9._-]{1,100}$'),
  -- The ACH window (Eastern HH:MM) that built it; NULL for a sandbox interval or an operator's `ach window run`.
  window_time        text CHECK (window_time ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
  -- The window run (workflow id) that built it: a retried build finds its file instead of building another.
  built_by           text NOT NULL UNIQUE CHECK (length(built_by) BETWEEN 1 AND 300),
  file_date          date NOT NULL,
  -- NACHA's File ID Modifier: A–Z then 0–9, one per file of a file date.
  file_id_modifier   text NOT NULL CHECK (file_id_modifier ~ '^[A-Z0-9]$'),
  -- The exact bytes sent to the bank, sealed (AES-256-GCM under BANK_DATA_KEY, bound to this row): they hold
  -- full account numbers.
  bytes_sealed       text NOT NULL CHECK (bytes_sealed ~ '^gcm1:[A-Za-z0-9+/=]+$'),
  sha256             text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  entry_count        integer NOT NULL CHECK (entry_count > 0),
  total_debit_cents  bigint NOT NULL CHECK (total_debit_cents >= 0),
  total_credit_cents bigint NOT NULL CHECK (total_credit_cents >= 0),
  -- When its entries settle (production: the window's FedACH settlement time; sandbox: the simulated bank's).
  settle_at          timestamptz NOT NULL,
  status             text NOT NULL DEFAULT 'built' CHECK (status IN ('built', 'delivered', 'settled')),
  created_at         timestamptz NOT NULL,
  delivered_at       timestamptz,
  settled_at         timestamptz,
  UNIQUE (file_date, file_id_modifier),
  CHECK ((status = 'built') = (delivered_at IS NULL)),
  CHECK ((status = 'settled') = (settled_at IS NOT NULL))
);
-- `ach files` and the undelivered gauge read files by status.
CREATE INDEX ach_files_by_status ON ach_files (status, created_at);

-- A built file never changes: only its status moves forward (built → delivered → settled), each time once.
CREATE FUNCTION ach_files_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER ach_files_guard BEFORE UPDATE OR DELETE ON ach_files FOR EACH ROW EXECUTE FUNCTION ach_files_guard();

CREATE TABLE ach_entries (
  id               text PRIMARY KEY DEFAULT ('ache_' || replace(gen_random_uuid()::text, '-', '')) CHECK (id ~ '^ache_[0-9a-f]{32}$'),
  organization_id  text NOT NULL REFERENCES organizations (id),
  -- The settlement account whose money moves (a CCD entry's operator bank account is this account's).
  account_id       text NOT NULL REFERENCES accounts (id),
  -- The environment whose key recorded the payment: a sandbox's simulated bank never files a production
  -- entry (nor production's ODFI a sandbox one) when both share a database.
  environment      text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  -- What it pays: a transaction (cash_in, cash_out, refund), or a transfer.
  transaction_id   text UNIQUE REFERENCES transactions (id),
  transfer_id      text UNIQUE REFERENCES transfers (id),
  -- The user's bank account (PPD); a CCD entry uses the operator's bank account of account_id.
  bank_account_id  text REFERENCES bank_accounts (id),
  sec_code         text NOT NULL CHECK (sec_code IN ('PPD', 'CCD')),
  transaction_code smallint NOT NULL CHECK (transaction_code IN (22, 27, 32, 37)),
  amount_cents     bigint NOT NULL CHECK (amount_cents > 0),
  -- Given when the entry joins its file: the ODFI's 8 routing digits and ach_trace_sequence's 7.
  trace_number     text UNIQUE CHECK (trace_number ~ '^[0-9]{15}$'),
  status           text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'in_file', 'delivered', 'settled', 'returned')),
  file_id          text REFERENCES ach_files (id),
  effective_date   date,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  settled_at       timestamptz,
  CHECK ((transaction_id IS NULL) <> (transfer_id IS NULL)),
  CHECK ((sec_code = 'PPD') = (bank_account_id IS NOT NULL)),
  CHECK ((sec_code = 'CCD') = (transfer_id IS NOT NULL)),
  CHECK ((status = 'queued') = (file_id IS NULL)),
  CHECK ((file_id IS NULL) = (trace_number IS NULL) AND (file_id IS NULL) = (effective_date IS NULL)),
  CHECK ((status = 'settled') <= (settled_at IS NOT NULL))
);
-- The window's claim: queued entries, oldest first.
CREATE INDEX ach_entries_queued ON ach_entries (environment, created_at, id) WHERE status = 'queued';
CREATE INDEX ach_entries_of_file ON ach_entries (file_id) WHERE file_id IS NOT NULL;

-- An entry's identity never changes; it joins a file once (file, trace number and effective date set
-- together, once) and its status only moves forward; a settled or delivered entry may be returned (SPEC §25).
CREATE FUNCTION ach_entries_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  steps constant text[] := ARRAY['queued', 'in_file', 'delivered', 'settled', 'returned'];
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'ACH entry %: an entry is never deleted', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.account_id <> OLD.account_id
     OR NEW.environment <> OLD.environment OR NEW.transaction_id IS DISTINCT FROM OLD.transaction_id OR NEW.transfer_id IS DISTINCT FROM OLD.transfer_id
     OR NEW.bank_account_id IS DISTINCT FROM OLD.bank_account_id OR NEW.sec_code <> OLD.sec_code
     OR NEW.transaction_code <> OLD.transaction_code OR NEW.amount_cents <> OLD.amount_cents OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'ACH entry %: only its file and status may change', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF OLD.file_id IS NOT NULL AND (NEW.file_id IS DISTINCT FROM OLD.file_id OR NEW.trace_number IS DISTINCT FROM OLD.trace_number
     OR NEW.effective_date IS DISTINCT FROM OLD.effective_date) THEN
    RAISE EXCEPTION 'ACH entry %: already in file %; an entry is in at most one file, ever', OLD.id, OLD.file_id
      USING ERRCODE = 'check_violation';
  END IF;
  IF array_position(steps, NEW.status) < array_position(steps, OLD.status) THEN
    RAISE EXCEPTION 'ACH entry %: % cannot go back to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ach_entries_guard BEFORE UPDATE OR DELETE ON ach_entries FOR EACH ROW EXECUTE FUNCTION ach_entries_guard();

-- A file holds exactly the entries it was built with: checked at commit, so the transaction that builds a
-- file inserts it and moves its entries in, and no later one can add an entry to it (its count and totals
-- would no longer be its bytes').
CREATE FUNCTION ach_entries_file_whole() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE CONSTRAINT TRIGGER ach_entries_file_whole AFTER UPDATE OF file_id ON ach_entries DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.file_id IS NOT NULL AND OLD.file_id IS NULL) EXECUTE FUNCTION ach_entries_file_whole();

-- SPEC §24: a cash_in of an intent with a bank account is a PPD debit of it (27 checking, 37 savings), and a
-- refund of such an intent a PPD credit to it (22, 32), queued in the very statement that records the
-- transaction, so no recorded payment lacks its entry. The environment is the recording key's (the intent
-- id's prefix, src/ids.ts).
CREATE FUNCTION transactions_ach_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_entries (organization_id, account_id, environment, transaction_id, bank_account_id, sec_code, transaction_code,
                           amount_cents, created_at, updated_at)
  SELECT n.organization_id, n.account_id, CASE WHEN i.id LIKE 'intent\_production\_%' THEN 'production' ELSE 'sandbox' END, n.id, b.id,
         'PPD', CASE WHEN n.direction = 'cash_in' THEN CASE b.account_type WHEN 'savings' THEN 37 ELSE 27 END
                     ELSE CASE b.account_type WHEN 'savings' THEN 32 ELSE 22 END END,
         n.amount_cents, n.created_at, n.created_at
    FROM new_rows n
    LEFT JOIN refunds r ON n.type = 'refund' AND r.id = n.source_id
    JOIN intents i ON i.id = CASE n.type WHEN 'intent' THEN n.source_id ELSE r.intent_id END
    JOIN bank_accounts b ON b.id = i.bank_account_id
   WHERE (n.type = 'intent' AND n.direction = 'cash_in') OR (n.type = 'refund' AND n.direction = 'cash_out')
   ORDER BY n.created_at, n.id;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_ach_entries AFTER INSERT ON transactions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_ach_entries();

-- SPEC §24: a cash_out of an intent with a bank account is a PPD credit to it, queued when its transfer is
-- created (the statement that batches it), so it is originated in the window after its settlement window.
CREATE FUNCTION transactions_ach_cash_out_credits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_entries (organization_id, account_id, environment, transaction_id, bank_account_id, sec_code, transaction_code,
                           amount_cents, created_at, updated_at)
  SELECT n.organization_id, n.account_id, CASE WHEN i.id LIKE 'intent\_production\_%' THEN 'production' ELSE 'sandbox' END, n.id, b.id,
         'PPD', CASE b.account_type WHEN 'savings' THEN 32 ELSE 22 END, n.amount_cents, n.updated_at, n.updated_at
    FROM new_rows n
    JOIN old_rows o ON o.id = n.id
    JOIN intents i ON i.id = n.source_id
    JOIN bank_accounts b ON b.id = i.bank_account_id
   WHERE n.type = 'intent' AND n.direction = 'cash_out' AND o.transfer_id IS NULL AND n.transfer_id IS NOT NULL
   ORDER BY n.updated_at, n.id
  ON CONFLICT (transaction_id) DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_ach_cash_out_credits AFTER UPDATE ON transactions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_ach_cash_out_credits();

-- Down Migration
DROP TRIGGER transactions_ach_cash_out_credits ON transactions;
DROP FUNCTION transactions_ach_cash_out_credits();
DROP TRIGGER transactions_ach_entries ON transactions;
DROP FUNCTION transactions_ach_entries();
DROP TABLE ach_entries;
DROP FUNCTION ach_entries_file_whole();
DROP FUNCTION ach_entries_guard();
DROP TABLE ach_files;
DROP FUNCTION ach_files_guard();
DROP SEQUENCE ach_trace_sequence;
