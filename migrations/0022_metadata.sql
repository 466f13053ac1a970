-- Up Migration
-- SPEC §18: the operator's own key/value pairs on users, intents and refunds. Shape and limits are checked by
-- the API (src/metadata/schemas.ts); the database keeps only what no writer may break: an object, always.
ALTER TABLE users ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object');
ALTER TABLE intents ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object');
ALTER TABLE refunds ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(metadata) = 'object');

-- `metadata @> '{"k":"v"}'` filters (GET /user, /intent, /refund, /transaction through its source). jsonb_path_ops
-- indexes one hash per key/value path: smaller and faster for @> than the default opclass, which also
-- serves key-existence operators no filter uses. The organization is checked on the few rows it finds.
-- fastupdate off: with it, new rows wait in a pending list (up to 4 MB) that every search reads in full until
-- a vacuum merges it, which costs a busy table milliseconds per filter; each insert updates the index instead.
CREATE INDEX users_metadata ON users USING gin (metadata jsonb_path_ops) WITH (fastupdate = off);
CREATE INDEX intents_metadata ON intents USING gin (metadata jsonb_path_ops) WITH (fastupdate = off);
CREATE INDEX refunds_metadata ON refunds USING gin (metadata jsonb_path_ops) WITH (fastupdate = off);

-- GET /transaction?user_id= finds the user's intents (and through them refunds and disputes) first.
CREATE INDEX intents_by_user ON intents (organization_id, user_id, created_at DESC, id DESC);
CREATE INDEX disputes_by_intent ON disputes (intent_id);

-- Down Migration
DROP INDEX disputes_by_intent;
DROP INDEX intents_by_user;
DROP INDEX refunds_metadata;
DROP INDEX intents_metadata;
DROP INDEX users_metadata;
ALTER TABLE refunds DROP COLUMN metadata;
ALTER TABLE intents DROP COLUMN metadata;
ALTER TABLE users DROP COLUMN metadata;
