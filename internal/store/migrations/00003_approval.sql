-- Agents' addresses an admin approved: an agent's advertised address is
-- dialled by its peers only when it is the address the agent connects
-- from or an admin approved it (fleet agents approve); the others wait
-- in pending.

-- +goose Up
ALTER TABLE agents ADD COLUMN pending TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN approved TEXT NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE agents DROP COLUMN approved;
ALTER TABLE agents DROP COLUMN pending;
