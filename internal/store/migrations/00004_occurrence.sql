-- A run remembers the occurrence of its schedule it is of, and each
-- occurrence is booked once per pair: a scheduler books an occurrence
-- and then claims it (moves the schedule's next_due on), so that a
-- controller killed between the two leaves the occurrence to be booked
-- again, and the index keeps what it booked already from being booked
-- twice. 0: a run of no occurrence.

-- +goose Up
ALTER TABLE runs ADD COLUMN occurrence BIGINT NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX runs_occurrence ON runs (schedule_id, occurrence, source, dest) WHERE occurrence <> 0;

-- +goose Down
DROP INDEX runs_occurrence;
ALTER TABLE runs DROP COLUMN occurrence;
