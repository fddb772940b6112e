-- Whether a transcript row exists only because a user saved the message (a save where the
-- namespace did not record): conversation.unsave_message removes such a row, and never one
-- the transcript recorded, even after recording is switched off. Rows saved before this
-- column, in a namespace that does not record now, are taken as saved-only: their unsave
-- removes them as it did.
ALTER TABLE loom.conversations ADD COLUMN IF NOT EXISTS saved_only boolean NOT NULL DEFAULT false;

UPDATE loom.conversations c SET saved_only = true
WHERE c.is_saved AND c.tombstoned_at IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM loom.namespaces n
    WHERE n.org = c.org AND n.namespace = c.namespace AND n.conversation_logging_enabled
  );
