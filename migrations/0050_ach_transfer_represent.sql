-- Up Migration
-- SPEC §25: a returned CCD entry (a transfer's, on the operator's bank account) waits for an operator. The
-- operator's action is to present it again (CLI `ach transfer represent TRANSFER`, docs/ach-returns.md): a new
-- CCD entry of the same transfer, amount and direction, on the operator bank account as it is now (corrected by
-- `account bank-account set` when the return said it was wrong), filed in the next window. `represents` names
-- the returned entry it replaces; a transfer so has one first entry and at most ACH_REPRESENT_MAX (2, the NACHA
-- Rules' limit on reinitiating an R01 or R09 return) more, each after the one before came back.
ALTER TABLE ach_entries ADD COLUMN represents text UNIQUE REFERENCES ach_entries (id);
ALTER TABLE ach_entries ADD CONSTRAINT ach_entries_represents_transfer CHECK (represents IS NULL OR transfer_id IS NOT NULL);
ALTER TABLE ach_entries DROP CONSTRAINT ach_entries_transfer_id_key;
CREATE UNIQUE INDEX ach_entries_transfer_first ON ach_entries (transfer_id) WHERE transfer_id IS NOT NULL AND represents IS NULL;
CREATE INDEX ach_entries_of_transfer ON ach_entries (transfer_id, created_at DESC) WHERE transfer_id IS NOT NULL;

CREATE FUNCTION ach_represent_max() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 2';

-- What a presentment again may be, checked where it is written: of a returned entry of the same transfer, the
-- same amount and direction (a credit stays a credit), at most ach_represent_max() per transfer.
CREATE FUNCTION ach_entries_represent_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  returned ach_entries;
  again bigint;
BEGIN
  SELECT * INTO returned FROM ach_entries WHERE id = NEW.represents FOR UPDATE;
  IF returned.status IS DISTINCT FROM 'returned' OR returned.transfer_id IS DISTINCT FROM NEW.transfer_id
     OR returned.amount_cents <> NEW.amount_cents OR (returned.transaction_code IN (27, 37)) <> (NEW.transaction_code IN (27, 37))
     OR returned.organization_id <> NEW.organization_id OR returned.account_id <> NEW.account_id OR returned.environment <> NEW.environment THEN
    RAISE EXCEPTION 'ACH entry %: presents again only a returned entry of its transfer, alike (% is %)', NEW.id, NEW.represents,
      coalesce(returned.status, 'missing') USING ERRCODE = 'check_violation';
  END IF;
  SELECT count(*) INTO again FROM ach_entries WHERE transfer_id = NEW.transfer_id AND represents IS NOT NULL;
  IF again >= ach_represent_max() THEN
    RAISE EXCEPTION 'transfer %: presented again % times already, the most there may be', NEW.transfer_id, again
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ach_entries_represent_guard BEFORE INSERT ON ach_entries FOR EACH ROW WHEN (NEW.represents IS NOT NULL)
  EXECUTE FUNCTION ach_entries_represent_guard();

-- `represents` never changes (0041's guard covers the columns it knew).
CREATE FUNCTION ach_entries_represents_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ACH entry %: only its file and status may change', OLD.id USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER ach_entries_represents_fixed BEFORE UPDATE ON ach_entries FOR EACH ROW
  WHEN (NEW.represents IS DISTINCT FROM OLD.represents) EXECUTE FUNCTION ach_entries_represents_fixed();

-- 0043's transfer entry, against the transfer's first entry now that a transfer may have more than one.
CREATE OR REPLACE FUNCTION transfers_ach_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_entries (organization_id, account_id, environment, transfer_id, sec_code, transaction_code, amount_cents,
                           created_at, updated_at)
  SELECT NEW.organization_id, NEW.account_id,
         CASE WHEN EXISTS (
           SELECT 1 FROM transactions t
             LEFT JOIN refunds r ON t.type = 'refund' AND r.id = t.source_id
             LEFT JOIN disputes d ON t.type = 'dispute' AND d.id = t.source_id
            WHERE t.transfer_id = NEW.id
              AND CASE t.type WHEN 'intent' THEN t.source_id WHEN 'refund' THEN r.intent_id ELSE d.intent_id END LIKE 'intent\_production\_%'
         ) THEN 'production' ELSE 'sandbox' END,
         NEW.id, 'CCD',
         CASE WHEN NEW.direction = 'disbursement' THEN CASE ob.account_type WHEN 'savings' THEN 32 ELSE 22 END
              ELSE CASE ob.account_type WHEN 'savings' THEN 37 ELSE 27 END END,
         NEW.amount_cents, NEW.created_at, NEW.created_at
    FROM operator_bank_accounts ob
   WHERE ob.account_id = NEW.account_id
  ON CONFLICT (transfer_id) WHERE transfer_id IS NOT NULL AND represents IS NULL DO NOTHING;
  RETURN NULL;
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION transfers_ach_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ach_entries (organization_id, account_id, environment, transfer_id, sec_code, transaction_code, amount_cents,
                           created_at, updated_at)
  SELECT NEW.organization_id, NEW.account_id,
         CASE WHEN EXISTS (
           SELECT 1 FROM transactions t
             LEFT JOIN refunds r ON t.type = 'refund' AND r.id = t.source_id
             LEFT JOIN disputes d ON t.type = 'dispute' AND d.id = t.source_id
            WHERE t.transfer_id = NEW.id
              AND CASE t.type WHEN 'intent' THEN t.source_id WHEN 'refund' THEN r.intent_id ELSE d.intent_id END LIKE 'intent\_production\_%'
         ) THEN 'production' ELSE 'sandbox' END,
         NEW.id, 'CCD',
         CASE WHEN NEW.direction = 'disbursement' THEN CASE ob.account_type WHEN 'savings' THEN 32 ELSE 22 END
              ELSE CASE ob.account_type WHEN 'savings' THEN 37 ELSE 27 END END,
         NEW.amount_cents, NEW.created_at, NEW.created_at
    FROM operator_bank_accounts ob
   WHERE ob.account_id = NEW.account_id
  ON CONFLICT (transfer_id) DO NOTHING;
  RETURN NULL;
END $$;
DROP TRIGGER ach_entries_represents_fixed ON ach_entries;
DROP FUNCTION ach_entries_represents_fixed();
DROP TRIGGER ach_entries_represent_guard ON ach_entries;
DROP FUNCTION ach_entries_represent_guard();
DROP FUNCTION ach_represent_max();
DROP INDEX ach_entries_of_transfer;
DROP INDEX ach_entries_transfer_first;
ALTER TABLE ach_entries ADD CONSTRAINT ach_entries_transfer_id_key UNIQUE (transfer_id);
ALTER TABLE ach_entries DROP CONSTRAINT ach_entries_represents_transfer;
ALTER TABLE ach_entries DROP COLUMN represents;
