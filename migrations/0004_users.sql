-- Up Migration
-- End users of an organization (SPEC §6). Personal data kept to what payments need: the legal name,
-- address, email, birth date and phone for the rails and compliance; of the government id only its type,
-- last four digits and issuing state, never the full number.
CREATE TABLE users (
  id                  text PRIMARY KEY CHECK (id ~ '^user_[A-Za-z0-9_-]{16,}$'),
  organization_id     text NOT NULL REFERENCES organizations (id),
  tag                 text CHECK (length(tag) BETWEEN 1 AND 255),
  status              text NOT NULL CHECK (status IN ('created', 'enabled', 'suspended', 'disabled')),
  identity_verified   boolean NOT NULL,
  first_name          text NOT NULL,
  last_name           text NOT NULL,
  email               text NOT NULL,
  date_of_birth       date NOT NULL,
  phone_number        text,
  address             jsonb NOT NULL,
  government_id_type  text NOT NULL CHECK (government_id_type IN ('passport', 'drivers_license', 'state_id', 'military_id', 'ssn')),
  government_id_last4 text NOT NULL CHECK (government_id_last4 ~ '^[0-9]{4}$'),
  government_id_state text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_tag ON users (organization_id, tag) WHERE tag IS NOT NULL;
CREATE INDEX users_list ON users (organization_id, created_at DESC, id DESC);

-- Down Migration
DROP TABLE users;
