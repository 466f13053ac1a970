-- Up Migration
-- SPEC §24: a transfer is a CCD entry on its settlement account's operator bank account (CLI `account bank
-- set`, operator_bank_accounts): a disbursement a credit to it (22 checking, 32 savings), a collection a debit
-- of it (27, 37); a 0 transfer makes no entry. Queued in the statement that completes the transfer (its
-- members joined, transaction_count 0 → n, src/settlement/repo.ts createWindowTransfer), so no transfer that
-- moves money through the rail lacks its entry. A settlement account without an operator bank account makes
-- no entry: its transfer settles as before (sandbox timer, production's signal).
-- Transfers carry no environment: a transfer's is its members' (one settlement account's payments share the
-- deployment that recorded them): production when a member's intent is a production intent (src/ids.ts), else
-- sandbox, so the window of each environment claims only its own (files.ts claimQueued).
CREATE FUNCTION transfers_ach_entries() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER transfers_ach_entries AFTER UPDATE OF transaction_count ON transfers FOR EACH ROW
  WHEN (OLD.transaction_count = 0 AND NEW.transaction_count > 0 AND NEW.amount_cents > 0) EXECUTE FUNCTION transfers_ach_entries();

-- Down Migration
DROP TRIGGER transfers_ach_entries ON transfers;
DROP FUNCTION transfers_ach_entries();
