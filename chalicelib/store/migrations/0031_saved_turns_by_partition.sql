-- Every saved turn, tombstoned ones too, in each month partition: the TTL's drop of a month
-- finds the saved turns it must take out of saved search through this index instead of
-- reading the whole month (docs/decisions/0031-transcript-partitions.md).
CREATE INDEX conversations_saved_any_idx ON loom.conversations (ts) WHERE is_saved;
