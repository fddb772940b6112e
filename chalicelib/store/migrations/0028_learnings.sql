-- The agent-learnings review queue (docs/decisions/0027-learnings-queue.md): a rule a bot
-- states about itself waits here for an admin's review; it is never written as a memory.
-- A candidate is one (agent, key, folded rule): its id is derived from them, so two sessions
-- filing the same rule at once meet on one row.
CREATE TABLE loom.learnings_queue (
    org text NOT NULL,
    namespace text NOT NULL,
    candidate_id text NOT NULL,
    agent text NOT NULL,
    key text NOT NULL,
    text text NOT NULL,              -- the rule as first filed; blanked once no supporter is left
    source_kind text NOT NULL DEFAULT 'assistant_turn',
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'promoted', 'rejected')),
    version integer NOT NULL DEFAULT 1,  -- 1 as filed; every review writes a newer one
    destination text NOT NULL DEFAULT '' CHECK (destination IN ('', 'knowledge', 'memory')),
    decided_by text NOT NULL DEFAULT '',
    decided_at timestamptz,
    note text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (org, namespace, candidate_id)
);
-- learnings.list pages a namespace's queue by status, newest first.
CREATE INDEX learnings_queue_list_idx
    ON loom.learnings_queue (org, namespace, status, created_at DESC, candidate_id);
-- The already_promoted check reads a bot's candidates under one key.
CREATE INDEX learnings_queue_key_idx ON loom.learnings_queue (org, namespace, agent, key);

-- One row a session that stated the rule: the end user's own quotes, which a user's erasure
-- deletes.
CREATE TABLE loom.learnings_supporters (
    org text NOT NULL,
    namespace text NOT NULL,
    candidate_id text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    asked_quote text NOT NULL DEFAULT '',   -- the user turn before the cited assistant turn
    rule_quote text NOT NULL DEFAULT '',   -- the rule as said: the cited span, else the turn
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (org, namespace, candidate_id, user_id, session_id)
);
CREATE INDEX learnings_supporters_user_idx ON loom.learnings_supporters (org, user_id);

-- An end-user token names the agent its issuer signed: the bot whose rules it files.
ALTER TABLE loom.tokens ADD COLUMN agent text;
-- A deferred request keeps its token's agent claim, so its replay files for the same bot.
ALTER TABLE loom.memory_extraction_queue ADD COLUMN token_agent text;
