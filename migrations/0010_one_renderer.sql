-- Up Migration
-- One Transaction renderer: transaction_json is the seed's Transaction exactly as the API shows it, built
-- by the database for every read, every RETURNING and every event (src/ledger/transactions.ts selects it).
-- `json`, not `jsonb`, so the keys keep the seed's order in responses; the nested TransferSummary is
-- unchanged.
DROP FUNCTION transaction_json(transactions);
CREATE FUNCTION transaction_json(t transactions) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'id', t.id, 'amount', t.amount_cents, 'direction', t.direction, 'currency', t.currency, 'status', t.status,
    'type', t.type, 'source_id', t.source_id, 'account_id', t.account_id,
    'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'date', to_char(t.date, 'YYYY-MM-DD'),
    'transfer', transfer_summary_json(t.status, t.transfer_id))
$$;

-- One event-id format, made in one place: every event (one at a time or a window's thousands in one
-- statement) takes its id from this default: 'evt_' + 32 hex digits of a CSPRNG UUID.
ALTER TABLE events ALTER COLUMN id SET DEFAULT 'evt_' || replace(gen_random_uuid()::text, '-', '');

-- Down Migration
ALTER TABLE events ALTER COLUMN id DROP DEFAULT;
DROP FUNCTION transaction_json(transactions);
CREATE FUNCTION transaction_json(t transactions) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', t.id, 'amount', t.amount_cents, 'direction', t.direction, 'currency', t.currency, 'status', t.status,
    'type', t.type, 'source_id', t.source_id, 'account_id', t.account_id,
    'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'date', to_char(t.date, 'YYYY-MM-DD'),
    'transfer', transfer_summary_json(t.status, t.transfer_id))
$$;
