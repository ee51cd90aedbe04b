-- Thresholds and health: a schedule's limits (fleet.Thresholds as JSON,
-- '' for none), and each result's schedule and health as judged when it
-- was stored, with the health of the pair's previous result of that
-- schedule and kind.

-- +goose Up
ALTER TABLE schedules ADD COLUMN thresholds TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN schedule_id TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN health TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN previous_health TEXT NOT NULL DEFAULT '';
-- One schedule's latest results and a pair's history of it (the web
-- page, PreviousHealth at upload).
CREATE INDEX results_schedule ON results (schedule_id, source, dest, kind, received);

-- +goose Down
DROP INDEX results_schedule;
ALTER TABLE results DROP COLUMN previous_health;
ALTER TABLE results DROP COLUMN health;
ALTER TABLE results DROP COLUMN schedule_id;
ALTER TABLE schedules DROP COLUMN thresholds;
