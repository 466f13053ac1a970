-- Up Migration
-- SPEC §15: a transfer is dated the first business day on or after the day its window closes, which is never
-- before the window itself (the hand-off to the rail waits for that date in the settlement workflow).
ALTER TABLE transfers ADD CONSTRAINT transfers_date_not_before_window CHECK (date >= window_date);

-- Down Migration
ALTER TABLE transfers DROP CONSTRAINT transfers_date_not_before_window;
