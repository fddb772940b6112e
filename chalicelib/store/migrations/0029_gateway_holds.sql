-- Held deferred extractions by the end of their hold (decision 0026): the worker takes a job
-- whose gateway hold ended, and takes none of an enqueuer the gateway still holds.
CREATE INDEX memory_extraction_queue_held_idx ON loom.memory_extraction_queue (not_before)
    WHERE status = 'held';
