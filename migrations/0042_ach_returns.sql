-- Up Migration
-- SPEC §25 what the bank sends back: return (addenda 99) and notification-of-change (98) files. Each file is
-- kept once by its content (a file seen again, under any name, changes nothing); each entry's return and each
-- of its notifications applies once (unique per entry and addenda type); what cannot be applied is kept as an
-- exception, never dropped. A file is ingested in one database transaction (src/ach/inbound.ts).

CREATE TABLE ach_inbound_files (
  id               text PRIMARY KEY DEFAULT ('achi_' || replace(gen_random_uuid()::text, '-', '')) CHECK (id ~ '^achi_[0-9a-f]{32}$'),
  -- The name it first arrived under (SFTP inbound/ or `ach inbound import PATH`'s base name).
  file_name        text NOT NULL CHECK (length(file_name) BETWEEN 1 AND 255),
  sha256           text NOT NULL UNIQUE CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  size_bytes       integer NOT NULL CHECK (size_bytes >= 0),
  -- The bytes as received, sealed (they hold account numbers) and bound to this row: an exception can be looked at again.
  bytes_sealed     text NOT NULL CHECK (bytes_sealed ~ '^gcm1:[A-Za-z0-9+/=]+$'),
  -- applied: parsed, each entry applied or kept as an exception; rejected: did not parse, nothing applied.
  status           text NOT NULL CHECK (status IN ('applied', 'rejected')),
  -- sandbox: the simulated bank's returns (POST /simulate/ach/return).
  source           text NOT NULL CHECK (source IN ('sftp', 'cli', 'sandbox')),
  entry_count      integer NOT NULL DEFAULT 0 CHECK (entry_count >= 0),
  returns_count    integer NOT NULL DEFAULT 0 CHECK (returns_count >= 0),
  changes_count    integer NOT NULL DEFAULT 0 CHECK (changes_count >= 0),
  exceptions_count integer NOT NULL DEFAULT 0 CHECK (exceptions_count >= 0),
  -- Entries that named a return or change already applied by an earlier file.
  duplicates_count integer NOT NULL DEFAULT 0 CHECK (duplicates_count >= 0),
  received_at      timestamptz NOT NULL,
  CHECK (status = 'applied' OR (returns_count = 0 AND changes_count = 0))
);
CREATE INDEX ach_inbound_files_recent ON ach_inbound_files (received_at DESC, id DESC);
-- The file row is written last, with its counts, by the transaction that applied its entries: their rows
-- reference it before it exists (the foreign keys below are checked at commit).

-- Every SFTP name seen in inbound/ with its size: the poll downloads only what it has not seen, and a file whose
-- bytes were already ingested under another name is recorded here and ingested never again.
CREATE TABLE ach_inbound_names (
  file_name  text PRIMARY KEY CHECK (length(file_name) BETWEEN 1 AND 255),
  size_bytes bigint NOT NULL CHECK (size_bytes >= 0),
  sha256     text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  seen_at    timestamptz NOT NULL
);

-- One row per return or notification applied to one of our entries.
CREATE TABLE ach_entry_returns (
  id              text PRIMARY KEY DEFAULT ('achr_' || replace(gen_random_uuid()::text, '-', '')) CHECK (id ~ '^achr_[0-9a-f]{32}$'),
  entry_id        text NOT NULL REFERENCES ach_entries (id),
  organization_id text NOT NULL REFERENCES organizations (id),
  inbound_file_id text NOT NULL REFERENCES ach_inbound_files (id) DEFERRABLE INITIALLY DEFERRED,
  -- 99 return, 98 notification of change.
  addenda_type    text NOT NULL CHECK (addenda_type IN ('99', '98')),
  code            text NOT NULL CHECK (code ~ '^[RC][0-9]{2}$' AND (addenda_type = '99') = (code LIKE 'R%')),
  -- The return's dispute (a PPD return of a transaction); NULL for a notification or a CCD return.
  dispute_id      text REFERENCES disputes (id),
  -- The bank's trace number of the return entry itself.
  return_trace    text NOT NULL CHECK (return_trace ~ '^[0-9]{15}$'),
  created_at      timestamptz NOT NULL,
  UNIQUE (entry_id, addenda_type)
);
CREATE INDEX ach_entry_returns_of_org ON ach_entry_returns (organization_id, created_at);

CREATE TABLE ach_exceptions (
  id              text PRIMARY KEY DEFAULT ('achx_' || replace(gen_random_uuid()::text, '-', '')) CHECK (id ~ '^achx_[0-9a-f]{32}$'),
  inbound_file_id text NOT NULL REFERENCES ach_inbound_files (id) DEFERRABLE INITIALLY DEFERRED,
  kind            text NOT NULL CHECK (kind IN ('unparseable_file', 'unknown_trace', 'foreign_odfi', 'transfer_returned', 'not_applicable')),
  -- The file's line (0: the whole file), the original trace number and code the entry named, when it named them.
  line            integer NOT NULL CHECK (line >= 0),
  trace_number    text CHECK (trace_number ~ '^[0-9]{15}$'),
  code            text CHECK (code ~ '^[RC][0-9]{2}$'),
  entry_id        text REFERENCES ach_entries (id),
  organization_id text REFERENCES organizations (id),
  -- What was wrong, never an account number.
  detail          text NOT NULL CHECK (length(detail) BETWEEN 1 AND 500),
  created_at      timestamptz NOT NULL
);
CREATE INDEX ach_exceptions_recent ON ach_exceptions (created_at DESC, id DESC);

-- Kept, never changed: what the bank sent and what it did is the record.
CREATE FUNCTION ach_inbound_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%: rows are never changed or removed (% refused)', TG_TABLE_NAME, TG_OP USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER ach_inbound_files_immutable BEFORE UPDATE OR DELETE ON ach_inbound_files FOR EACH ROW EXECUTE FUNCTION ach_inbound_immutable();
CREATE TRIGGER ach_entry_returns_immutable BEFORE UPDATE OR DELETE ON ach_entry_returns FOR EACH ROW EXECUTE FUNCTION ach_inbound_immutable();
CREATE TRIGGER ach_exceptions_immutable BEFORE UPDATE OR DELETE ON ach_exceptions FOR EACH ROW EXECUTE FUNCTION ach_inbound_immutable();

-- SPEC §25 return rates, answered from kept counts (not a scan of the entries): per organization and UTC day of
-- the debit entry's creation, its debits and how many of them came back, by the Rules' categories. A return
-- counts on its debit's day, so a rate over the last 60 days is returned debits of those days over their debits.
CREATE TABLE ach_return_counts (
  organization_id text NOT NULL REFERENCES organizations (id),
  day             date NOT NULL,
  debits          integer NOT NULL DEFAULT 0 CHECK (debits >= 0),
  returned        integer NOT NULL DEFAULT 0 CHECK (returned >= 0),
  unauthorized    integer NOT NULL DEFAULT 0 CHECK (unauthorized >= 0),
  administrative  integer NOT NULL DEFAULT 0 CHECK (administrative >= 0),
  PRIMARY KEY (organization_id, day),
  CHECK (unauthorized + administrative <= returned)
);

-- Debit entries (27, 37) counted in the statement that queues them (a batch of deposits is one update per day).
CREATE FUNCTION ach_entries_count_debits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_return_counts (organization_id, day, debits)
  SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date, count(*) FROM new_rows WHERE transaction_code IN (27, 37)
   GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (organization_id, day) DO UPDATE SET debits = ach_return_counts.debits + EXCLUDED.debits;
  RETURN NULL;
END $$;
CREATE TRIGGER ach_entries_count_debits AFTER INSERT ON ach_entries REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION ach_entries_count_debits();

-- A debit's return counted once, with the row that makes it apply once.
CREATE FUNCTION ach_entry_returns_count() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- Which thresholds an organization is over: ach.return_rate_exceeded is emitted when one is crossed upward,
-- once, and again only after the rate fell back under it.
CREATE TABLE ach_return_rate_alerts (
  organization_id text NOT NULL REFERENCES organizations (id),
  kind            text NOT NULL CHECK (kind IN ('unauthorized', 'administrative', 'overall')),
  exceeded        boolean NOT NULL,
  changed_at      timestamptz NOT NULL,
  PRIMARY KEY (organization_id, kind)
);

-- The sandbox's simulated bank looks at each settled sandbox entry once (R + code: returned; C + code: corrected).
CREATE TABLE ach_sandbox_bank_seen (
  entry_id text PRIMARY KEY REFERENCES ach_entries (id),
  seen_at  timestamptz NOT NULL
);

-- Entries queued before this migration are counted once, here.
INSERT INTO ach_return_counts (organization_id, day, debits)
SELECT organization_id, (created_at AT TIME ZONE 'UTC')::date, count(*) FROM ach_entries WHERE transaction_code IN (27, 37) GROUP BY 1, 2;

-- Down Migration
DROP TABLE ach_sandbox_bank_seen;
DROP TABLE ach_return_rate_alerts;
DROP TRIGGER ach_entry_returns_count ON ach_entry_returns;
DROP FUNCTION ach_entry_returns_count();
DROP TRIGGER ach_entries_count_debits ON ach_entries;
DROP FUNCTION ach_entries_count_debits();
DROP TABLE ach_return_counts;
DROP TABLE ach_inbound_names;
DROP TABLE ach_exceptions;
DROP TABLE ach_entry_returns;
DROP TABLE ach_inbound_files;
DROP FUNCTION ach_inbound_immutable();
