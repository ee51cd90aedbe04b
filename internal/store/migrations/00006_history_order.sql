-- A pair's history in the order it is listed (received, then run ID,
-- newest first) straight from the index results_latest, without a sort
-- of its rows by run ID within each millisecond: SQLite passed every row
-- of a history through a temporary B-tree for that, each of them with
-- all its figures once those became columns (migration 5).

-- +goose Up
DROP INDEX results_latest;
CREATE INDEX results_latest ON results (source, dest, kind, received, run_id);

-- +goose Down
DROP INDEX results_latest;
CREATE INDEX results_latest ON results (source, dest, kind, received);
