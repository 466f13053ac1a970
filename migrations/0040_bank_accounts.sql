-- Up Migration
-- SPEC §24 bank accounts, the data the ACH rail originates from (docs/ach.md). A full account number rests
-- only sealed (AES-256-GCM under BANK_DATA_KEY, `gcm1:` + base64, bound to its row by the cipher's additional
-- data, src/bankAccounts/sealing.ts): a CHECK refuses anything else in a sealed column. Routing numbers, the
-- last four characters and the account type are not secret and are kept plain, for answers and filters.

-- A bank token carries the sealed number from POST /token to POST /authorize, which moves it into the user's
-- bank account and clears it here: a spent token keeps only its masked form. Tokens made before this
-- migration have no routing number or sealed number and authorize without a bank account, as they did.
ALTER TABLE payment_tokens
  ADD COLUMN routing_number        text CHECK (routing_number ~ '^[0-9]{9}$'),
  ADD COLUMN account_type          text CHECK (account_type IN ('checking', 'savings')),
  ADD COLUMN account_number_sealed text CHECK (account_number_sealed ~ '^gcm1:[A-Za-z0-9+/=]+$'),
  ADD COLUMN bank_account_id       text,
  ADD CONSTRAINT payment_tokens_bank_details CHECK (type = 'bank_account' OR (routing_number IS NULL AND account_type IS NULL
                                                    AND account_number_sealed IS NULL AND bank_account_id IS NULL)),
  -- SPEC §24: account numbers are 4–17 letters or digits, so their last four may hold letters.
  DROP CONSTRAINT payment_tokens_last4_check,
  ADD CONSTRAINT payment_tokens_last4_check CHECK (last4 ~ '^[A-Za-z0-9]{4}$');

-- Recording the use may now also clear the sealed number and name the bank account it became; nothing else moves.
CREATE OR REPLACE FUNCTION payment_tokens_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.used_at IS NOT NULL THEN
    RAISE EXCEPTION 'token % was already used', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.user_id <> OLD.user_id OR NEW.type <> OLD.type
     OR NEW.last4 <> OLD.last4 OR NEW.expires_at <> OLD.expires_at OR NEW.created_at <> OLD.created_at
     OR NEW.routing_number IS DISTINCT FROM OLD.routing_number OR NEW.account_type IS DISTINCT FROM OLD.account_type
     OR (NEW.account_number_sealed IS NOT NULL AND NEW.account_number_sealed IS DISTINCT FROM OLD.account_number_sealed) THEN
    RAISE EXCEPTION 'token %: only its use may be recorded', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

-- A user's reusable bank account (SPEC §24), made by POST /authorize with a bank token. `account_fingerprint`
-- is HMAC-SHA256 of routing and number under a key derived from BANK_DATA_KEY (never a plain hash: account
-- numbers are short enough to enumerate): the same account authorized again for the same user is the same row.
CREATE TABLE bank_accounts (
  id                    text PRIMARY KEY CHECK (id ~ '^ba_[A-Za-z0-9_-]{16,}$'),
  organization_id       text NOT NULL REFERENCES organizations (id),
  user_id               text NOT NULL REFERENCES users (id),
  routing_number        text NOT NULL CHECK (routing_number ~ '^[0-9]{9}$'),
  bank_name             text CHECK (length(bank_name) <= 100),
  last4                 text NOT NULL CHECK (last4 ~ '^[A-Za-z0-9]{4}$'),
  account_type          text NOT NULL CHECK (account_type IN ('checking', 'savings')),
  account_number_sealed text NOT NULL CHECK (account_number_sealed ~ '^gcm1:[A-Za-z0-9+/=]+$'),
  account_fingerprint   text NOT NULL CHECK (account_fingerprint ~ '^hmac1:[0-9a-f]{64}$'),
  status                text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  disabled_reason       text CHECK (length(disabled_reason) BETWEEN 1 AND 200),
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL,
  CHECK ((status = 'disabled') = (disabled_reason IS NOT NULL)),
  UNIQUE (organization_id, user_id, account_fingerprint)
);
-- GET /user/{id}/bank_account pages newest first; an intent's default is the user's newest active one.
CREATE INDEX bank_accounts_of_user ON bank_accounts (user_id, created_at DESC, id DESC);

ALTER TABLE payment_tokens ADD CONSTRAINT payment_tokens_bank_account_id_fkey FOREIGN KEY (bank_account_id) REFERENCES bank_accounts (id);

-- The account an intent's ACH entry debits or credits (SPEC §24); NULL: none (sandbox simulates the network).
ALTER TABLE intents
  ADD COLUMN bank_account_id text REFERENCES bank_accounts (id),
  DROP CONSTRAINT intents_decline_category_check,
  ADD CONSTRAINT intents_decline_category_check
    CHECK (decline_category IN ('user_not_enabled', 'card_expired', 'limit_exceeded', 'bank_account_disabled', 'no_bank_account'));
CREATE INDEX intents_bank_account ON intents (bank_account_id) WHERE bank_account_id IS NOT NULL;

-- An intent's bank account is fixed when it is recorded, like its user and account.
CREATE OR REPLACE FUNCTION intents_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.account_id <> OLD.account_id
     OR NEW.user_id <> OLD.user_id OR NEW.direction <> OLD.direction OR NEW.amount_cents <> OLD.amount_cents
     OR NEW.approval_mode <> OLD.approval_mode OR NEW.created_at <> OLD.created_at
     OR NEW.bank_account_id IS DISTINCT FROM OLD.bank_account_id THEN
    RAISE EXCEPTION 'intent %: only status may change', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status <> OLD.status AND OLD.status <> 'pending' THEN
    RAISE EXCEPTION 'intent %: % is final', OLD.id, OLD.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

-- The operator's own bank account behind a settlement account (SPEC §24): the CCD entries of its transfers.
-- Set only by the CLI (`account bank-account set`), sealed alike.
CREATE TABLE operator_bank_accounts (
  account_id            text PRIMARY KEY REFERENCES accounts (id),
  routing_number        text NOT NULL CHECK (routing_number ~ '^[0-9]{9}$'),
  last4                 text NOT NULL CHECK (last4 ~ '^[A-Za-z0-9]{4}$'),
  account_type          text NOT NULL CHECK (account_type IN ('checking', 'savings')),
  account_number_sealed text NOT NULL CHECK (account_number_sealed ~ '^gcm1:[A-Za-z0-9+/=]+$'),
  updated_at            timestamptz NOT NULL
);

-- The originator an organization's ACH batches name (SPEC §24, CLI `org ach set`): NACHA's Company
-- Identification (10 positions) and Company Name (16 positions), printable ASCII.
CREATE TABLE organization_ach (
  organization_id text PRIMARY KEY REFERENCES organizations (id),
  company_id      text NOT NULL CHECK (company_id ~ '^[ -~]{1,10}$'),
  company_name    text NOT NULL CHECK (company_name ~ '^[ -~]{1,16}$'),
  updated_at      timestamptz NOT NULL
);

-- Down Migration
DROP TABLE organization_ach;
DROP TABLE operator_bank_accounts;
CREATE OR REPLACE FUNCTION intents_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.account_id <> OLD.account_id
     OR NEW.user_id <> OLD.user_id OR NEW.direction <> OLD.direction OR NEW.amount_cents <> OLD.amount_cents
     OR NEW.approval_mode <> OLD.approval_mode OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'intent %: only status may change', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status <> OLD.status AND OLD.status <> 'pending' THEN
    RAISE EXCEPTION 'intent %: % is final', OLD.id, OLD.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
ALTER TABLE intents
  DROP COLUMN bank_account_id,
  DROP CONSTRAINT intents_decline_category_check,
  ADD CONSTRAINT intents_decline_category_check CHECK (decline_category IN ('user_not_enabled', 'card_expired', 'limit_exceeded'));
CREATE OR REPLACE FUNCTION payment_tokens_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.used_at IS NOT NULL THEN
    RAISE EXCEPTION 'token % was already used', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.user_id <> OLD.user_id OR NEW.type <> OLD.type
     OR NEW.last4 <> OLD.last4 OR NEW.expires_at <> OLD.expires_at OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'token %: only its use may be recorded', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
ALTER TABLE payment_tokens
  DROP CONSTRAINT payment_tokens_bank_details,
  DROP COLUMN bank_account_id,
  DROP COLUMN account_number_sealed,
  DROP COLUMN account_type,
  DROP COLUMN routing_number;
DROP TABLE bank_accounts;
