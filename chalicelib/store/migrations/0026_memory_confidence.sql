-- Fact quality (decision 0024). Every memory carries a confidence in [0, 1]: 1.0 when written,
-- lowered by a memory.apply demote. confidence_before keeps the value the first demote found,
-- so a restore undoes every demote since. last_read_at is when memory.get last read the row by
-- its key, so a clean-up leaves alone what an agent still asks for by name.
ALTER TABLE loom.memories
    ADD COLUMN confidence real NOT NULL DEFAULT 1.0
        CONSTRAINT memories_confidence_range CHECK (confidence >= 0 AND confidence <= 1),
    ADD COLUMN confidence_before real,
    ADD COLUMN last_read_at timestamptz;
