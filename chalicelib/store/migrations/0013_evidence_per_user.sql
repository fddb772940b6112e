-- A replay of an extraction finds the turns it stored by its request id. The id is the
-- client's own: two users sending the same one must each keep their own turns, never reach
-- (or be linked to) the other's.
DROP INDEX loom.memory_evidence_request_idx;
CREATE UNIQUE INDEX memory_evidence_request_idx
    ON loom.memory_evidence (org, namespace, user_id, request_id, idx);
