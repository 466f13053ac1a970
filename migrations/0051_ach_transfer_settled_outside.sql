-- Up Migration
-- SPEC §25: a returned CCD entry (a transfer's, on the operator's bank account) waits for an operator. Besides
-- presenting the transfer again (0050), the operator may move the money outside ACH (a wire, a book transfer at
-- the bank) and record that it did (CLI `ach transfer settled-outside TRANSFER --reference REF`,
-- docs/ach-returns.md): one row per transfer, on its last entry, which must be returned and not presented again.
-- A transfer still pending then settles on the network's signal, as when its entry settles. The entry stays
-- `returned` (a row only moves forward); nothing is presented again after it.
CREATE TABLE ach_transfer_settled_outside (
  transfer_id text PRIMARY KEY REFERENCES transfers (id),
  entry_id text NOT NULL UNIQUE REFERENCES ach_entries (id),
  -- The operator's reference of the outside payment (a wire's IMAD, a bank's confirmation): printable ASCII,
  -- 1 to 64 characters, no space at either end.
  reference text NOT NULL CHECK (reference ~ '^[!-~]([ -~]{0,62}[!-~])?$'),
  created_at timestamptz NOT NULL
);

-- What may be recorded, checked where it is written: the transfer's own entry, returned, and the last one (no
-- entry presents it again). The entry is locked first, as 0050's guard locks it, so a presentment and an
-- outside settlement of one entry at once cannot both be written.
CREATE FUNCTION ach_transfer_settled_outside_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  returned ach_entries;
BEGIN
  SELECT * INTO returned FROM ach_entries WHERE id = NEW.entry_id FOR UPDATE;
  IF returned.status IS DISTINCT FROM 'returned' OR returned.transfer_id IS DISTINCT FROM NEW.transfer_id
     OR EXISTS (SELECT 1 FROM ach_entries WHERE represents = NEW.entry_id) THEN
    RAISE EXCEPTION 'transfer %: only its last entry, returned, is settled outside ACH (% is %)', NEW.transfer_id, NEW.entry_id,
      coalesce(returned.status, 'missing') USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER ach_transfer_settled_outside_guard BEFORE INSERT ON ach_transfer_settled_outside FOR EACH ROW
  EXECUTE FUNCTION ach_transfer_settled_outside_guard();

-- A record of what happened: never changed, never removed.
CREATE FUNCTION ach_transfer_settled_outside_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'transfer %: its settlement outside ACH is a record and does not change', OLD.transfer_id
    USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER ach_transfer_settled_outside_fixed BEFORE UPDATE OR DELETE ON ach_transfer_settled_outside FOR EACH ROW
  EXECUTE FUNCTION ach_transfer_settled_outside_fixed();

-- 0050's guard, now also refusing to present again an entry settled outside ACH.
CREATE OR REPLACE FUNCTION ach_entries_represent_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
  IF EXISTS (SELECT 1 FROM ach_transfer_settled_outside WHERE entry_id = NEW.represents) THEN
    RAISE EXCEPTION 'transfer %: settled outside ACH, nothing is presented again', NEW.transfer_id USING ERRCODE = 'check_violation';
  END IF;
  SELECT count(*) INTO again FROM ach_entries WHERE transfer_id = NEW.transfer_id AND represents IS NOT NULL;
  IF again >= ach_represent_max() THEN
    RAISE EXCEPTION 'transfer %: presented again % times already, the most there may be', NEW.transfer_id, again
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION ach_entries_represent_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
DROP TABLE ach_transfer_settled_outside;
DROP FUNCTION ach_transfer_settled_outside_fixed();
DROP FUNCTION ach_transfer_settled_outside_guard();
