-- Up Migration
-- The events API (SPEC §17). GET /event pages an organization's events newest first on the same keyset as
-- every list (created_at DESC, id DESC); a webhook replay walks the same index oldest first.
CREATE INDEX events_list ON events (organization_id, created_at DESC, id DESC);
-- `object_id` is data.id, the resource an event is about: an expression index, so no writer of the outbox
-- (features, the database's own triggers) has a second column to keep in step.
CREATE INDEX events_by_object ON events (organization_id, (data ->> 'id'), created_at DESC, id DESC);
-- The retention sweep deletes the oldest events of every organization first.
CREATE INDEX events_by_age ON events (created_at);
-- A delivery's attempts by event: the sweep deletes them with their event, a replay with failed_only asks
-- whether one succeeded, and a resend reuses the event's earlier attempts' webhook-id.
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (event_id, endpoint_id, outcome);

-- Down Migration
DROP INDEX webhook_deliveries_by_event;
DROP INDEX events_by_age;
DROP INDEX events_by_object;
DROP INDEX events_list;
