-- Up Migration
-- Organizations (operators), their settlement accounts, API keys (hashes only) and IP allowlists.
CREATE TABLE organizations (
  id               text PRIMARY KEY CHECK (id ~ '^org_[A-Za-z0-9_-]{16,}$'),
  name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  kyc_required     boolean NOT NULL DEFAULT true,
  rate_limit_write integer NOT NULL DEFAULT 100 CHECK (rate_limit_write BETWEEN 1 AND 1000000),
  rate_limit_read  integer NOT NULL DEFAULT 1000 CHECK (rate_limit_read BETWEEN 1 AND 1000000),
  created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE accounts (
  id              text PRIMARY KEY CHECK (id ~ '^account_[A-Za-z0-9_-]{16,}$'),
  organization_id text NOT NULL REFERENCES organizations (id),
  type            text NOT NULL DEFAULT 'settlement' CHECK (type = 'settlement'),
  name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX accounts_by_org ON accounts (organization_id, created_at DESC, id DESC);

CREATE TABLE api_keys (
  id              text PRIMARY KEY CHECK (id ~ '^key_[A-Za-z0-9_-]{16,}$'),
  organization_id text NOT NULL REFERENCES organizations (id),
  environment     text NOT NULL CHECK (environment IN ('sandbox', 'production')),
  -- SHA-256 of the whole key: keys carry 192 random bits, so a fast hash is as good as a slow one here.
  key_hash        bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
  last4           text NOT NULL CHECK (length(last4) = 4),
  created_at      timestamptz NOT NULL DEFAULT now(),
  revoked_at      timestamptz
);
CREATE INDEX api_keys_by_org ON api_keys (organization_id, created_at);

CREATE TABLE ip_allowlist (
  organization_id text NOT NULL REFERENCES organizations (id),
  cidr            cidr NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organization_id, cidr)
);

-- Down Migration
DROP TABLE ip_allowlist;
DROP TABLE api_keys;
DROP TABLE accounts;
DROP TABLE organizations;
