// Generated from Loom's OpenAPI document by `npm run generate` (scripts/generate.mjs):
// do not edit.

export interface paths {
    "/v1/context.pack": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * What an agent should know before it answers, in one call, within `budget_tokens`:
         * @description What an agent should know before it answers, in one call, within `budget_tokens`:
         *     memories (by the query, else pinned first, then by confidence and recency; junk left out),
         *     the knowledge served to this agent, the session brief, the thread's recent turns and, with
         *     `include_conversation`, turns the query finds: Markdown ready for a prompt (`text`) and the
         *     same items with their sources (`sections`).
         *
         *     `tokens` is an estimate (one token per four bytes of UTF-8, rounded up) and never above
         *     the budget. Text that reads as high is never returned.
         */
        post: operations["context.pack"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.append": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Log one turn, once; embed it for search when it is a plain user or assistant turn.
         * @description Log one turn, once; embed it for search when it is a plain user or assistant turn.
         */
        post: operations["conversation.append"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.compact": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Summarise the oldest turns before the last `keep_recent` into one embedded system turn
         * @description Summarise the oldest turns before the last `keep_recent` into one embedded system turn
         *     that lists them in `metadata.compacted_from`, and retire the originals.
         */
        post: operations["conversation.compact"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.create": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Open (or re-open) a thread row: title, metadata and run_id up front.
         * @description Open (or re-open) a thread row: title, metadata and run_id up front.
         */
        post: operations["conversation.create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Tombstone a thread; an embedding another agent's live copy holds passes to that copy.
         * @description Tombstone a thread; an embedding another agent's live copy holds passes to that copy.
         */
        post: operations["conversation.delete"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * One thread's metadata, and a page of its turns when asked.
         * @description One thread's metadata, and a page of its turns when asked.
         *
         *     A page ends early once its turns reach LOOM_CONVERSATION_PAGE_MAX_BYTES of JSON (1 MiB by
         *     default; one turn always): the next starts at offset + len(messages).
         */
        post: operations["conversation.get"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.get_logging": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Whether this namespace records transcripts (false for a namespace never switched on).
         * @description Whether this namespace records transcripts (false for a namespace never switched on).
         */
        post: operations["conversation.get_logging"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A thread's turns, oldest first, by keyset cursor: no turn skipped or repeated.
         * @description A thread's turns, oldest first, by keyset cursor: no turn skipped or repeated.
         *
         *     A page ends early once its turns reach LOOM_CONVERSATION_PAGE_MAX_BYTES of JSON (1 MiB by
         *     default; one turn always); next_cursor goes on from the last turn it holds.
         */
        post: operations["conversation.list"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.list_saved_messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * One user's saved messages, most recently saved first; `ts` is when it was saved.
         * @description One user's saved messages, most recently saved first; `ts` is when it was saved.
         */
        post: operations["conversation.list_saved_messages"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.save_message": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Flag one message saved for its user (storing it if the transcript does not hold it),
         * @description Flag one message saved for its user (storing it if the transcript does not hold it),
         *     and make sure it has a vector; retrying repairs whatever an earlier call left undone.
         */
        post: operations["conversation.save_message"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.saved_status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Which of these messages this user has saved, in the order asked.
         * @description Which of these messages this user has saved, in the order asked.
         */
        post: operations["conversation.saved_status"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rank embedded turns over the floor; substring match when the embedder is down.
         * @description Rank embedded turns over the floor; substring match when the embedder is down.
         */
        post: operations["conversation.search"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.search_saved_messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Hybrid search over one user's saved messages: a vector leg on the first 2,048
         * @description Hybrid search over one user's saved messages: a vector leg on the first 2,048
         *     characters and a BM25 leg over the whole text, fused by reciprocal rank.
         */
        post: operations["conversation.search_saved_messages"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.set_logging": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Switch transcript recording for one namespace (off until an admin turns it on).
         * @description Switch transcript recording for one namespace (off until an admin turns it on).
         */
        post: operations["conversation.set_logging"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.threads": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Recent threads, newest first; a last turn or title that reads as high shows empty.
         * @description Recent threads, newest first; a last turn or title that reads as high shows empty.
         */
        post: operations["conversation.threads"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.unsave_message": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Withdraw a saved message: the flag goes; the turn goes too where the row existed only
         * @description Withdraw a saved message: the flag goes; the turn goes too where the row existed only
         *     because of the save, which no transcript read serves even once the namespace records (a
         *     turn the transcript recorded stays, even once recording is off). Never says who else
         *     saved it.
         */
        post: operations["conversation.unsave_message"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/conversation.update": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Change a thread's title, metadata (replaced whole) or run_id ("" detaches it).
         * @description Change a thread's title, metadata (replaced whole) or run_id ("" detaches it).
         */
        post: operations["conversation.update"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/erasure.export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Everything held about a user or namespaces, one JSON document paged by `limit` rows,
         * @description Everything held about a user or namespaces, one JSON document paged by `limit` rows,
         *     tombstoned rows included unless include_tombstoned is false; embedding rows are not.
         */
        post: operations["erasure.export"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/erasure.request": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Tombstone every row of a user or of namespaces in every plane (with purge, remove them
         * @description Tombstone every row of a user or of namespaces in every plane (with purge, remove them
         *     from disk); a large subject runs as a job whose status erasure.status reads.
         */
        post: operations["erasure.request"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/erasure.status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * One erasure job of the org (of its namespace, for a token bound to one): its state and
         * @description One erasure job of the org (of its namespace, for a token bound to one): its state and
         *     what it has tombstoned and removed so far.
         */
        post: operations["erasure.status"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/extraction_policy.clear": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Remove one scope's policy (clearing a namespace's leaves the org's in force).
         * @description Remove one scope's policy (clearing a namespace's leaves the org's in force).
         */
        post: operations["extraction_policy.clear"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/extraction_policy.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A scope's policy and the effective text its extractions run under.
         * @description A scope's policy and the effective text its extractions run under.
         */
        post: operations["extraction_policy.get"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/extraction_policy.set": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Set the org's policy or a namespace's addition to it.
         * @description Set the org's policy or a namespace's addition to it.
         */
        post: operations["extraction_policy.set"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/knowledge.delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Remove the document at `uri` and its chunks; `found` says whether one existed.
         * @description Remove the document at `uri` and its chunks; `found` says whether one existed.
         */
        post: operations["knowledge.delete"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/knowledge.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * One document by `uri`, its whole text as published, or `found: false`. A document whose
         * @description One document by `uri`, its whole text as published, or `found: false`. A document whose
         *     text reads as high is served here only, with an audit row (as memory.get serves a fact).
         */
        post: operations["knowledge.get"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/knowledge.list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The namespace's documents, newest first, without their text; `tags` keeps those carrying
         * @description The namespace's documents, newest first, without their text; `tags` keeps those carrying
         *     every tag named, `uri_prefix` those whose uri starts with it. At most 200 a page.
         */
        post: operations["knowledge.list"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/knowledge.publish": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create or replace the document at `uri` (a scheme, at most 500 characters; text at most
         * @description Create or replace the document at `uri` (a scheme, at most 500 characters; text at most
         *     1,000,000 characters; at most 50 tags). The same text, title and tags as stored change
         *     nothing (`changed: false`). `if_version` compares and sets: 409 unless the stored version
         *     is that one (0: no document yet). A chunk that reads as high is stored but never embedded,
         *     indexed or returned, counted in `chunks_withheld`.
         */
        post: operations["knowledge.publish"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/knowledge.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Chunks of the namespace's documents by meaning and by words (BM25), fused by reciprocal
         * @description Chunks of the namespace's documents by meaning and by words (BM25), fused by reciprocal
         *     rank (`search_mode` hybrid), or by one of them (semantic, lexical); `tags` (all of them)
         *     and `uri_prefix` narrow the documents. `namespace: "all_mine"` reads every namespace of
         *     the org up to the fan-out cap, as memory.search does. Not filtered by agent: a bot finds
         *     its own rules with tags=["agent:<agent>"]. A chunk that reads as high is never a hit.
         */
        post: operations["knowledge.search"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/learnings.list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The namespace's learnings review queue, newest first, filtered by `status` and `agent`:
         * @description The namespace's learnings review queue, newest first, filtered by `status` and `agent`:
         *     each candidate's rule, its supporters left (`support`) and, as `rationale`, the earliest
         *     remaining supporter's quotes. At most 200 a page.
         */
        post: operations["learnings.list"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/learnings.review": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Promote or reject one candidate. A promotion to knowledge (the default) publishes the
         * @description Promote or reject one candidate. A promotion to knowledge (the default) publishes the
         *     rule as learning://<candidate_id>, tagged agent:<agent> (none for a rule of every agent)
         *     and authored by the reviewer, served to that bot's reads only; to memory, it writes the
         *     agent's memory row (user_id -, source learning:<candidate_id>). A rejection serves
         *     nothing; a promoted rule's document stays until knowledge.delete removes it. `found` is
         *     false for an id the queue does not hold.
         */
        post: operations["learnings.review"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.apply": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Demote (confidence times factor), label (tag quality:<class>) or restore (undo both)
         * @description Demote (confidence times factor), label (tag quality:<class>) or restore (undo both)
         *     memories of this namespace by key, in order, in one transaction; never deletes. A dry
         *     run answers what would change and changes nothing.
         */
        post: operations["memory.apply"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.ask": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A question answered from every plane: `passages` (memory facts, knowledge chunks and the
         * @description A question answered from every plane: `passages` (memory facts, knowledge chunks and the
         *     transcript chunks extraction kept, each with its source and score). A question naming a
         *     document's uri, or whose best knowledge hit is a document of at most 4,000 characters,
         *     gets that whole document as one passage. With `synthesize` and a configured model, an
         *     `answer` written from those passages only, citing them by number; with no model, or one that
         *     fails, the passages come back alone with `answer_error`. The agent defaults to '*'.
         */
        post: operations["memory.ask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.blacklist": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Add (or with remove=true, drop) a pattern no memory write may match: a regular
         * @description Add (or with remove=true, drop) a pattern no memory write may match: a regular
         *     expression of at most 500 characters in RE2's syntax, case-blind, run by RE2 in time
         *     linear in the value whatever the pattern. One RE2 cannot compile (a lookaround, a
         *     backreference, a pattern too large) matches as plain text, case-blind.
         */
        post: operations["memory.blacklist"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.bulk_set": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Write up to 500 facts, each with its verdict.
         * @description Write up to 500 facts, each with its verdict.
         */
        post: operations["memory.bulk_set"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Retire a memory (a locked one stays).
         * @description Retire a memory (a locked one stays).
         */
        post: operations["memory.delete"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.evidence": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The source turns one memory was extracted from, with the supporting span.
         * @description The source turns one memory was extracted from, with the supporting span.
         */
        post: operations["memory.evidence"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.extraction_retry_mine": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replay the caller's failed batches once more; waiting or done batches are left alone.
         * @description Replay the caller's failed batches once more; waiting or done batches are left alone.
         */
        post: operations["memory.extraction_retry_mine"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.extraction_status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The namespace's deferred batches by id or status; a user-bounded token sees its user's.
         * @description The namespace's deferred batches by id or status; a user-bounded token sees its user's.
         */
        post: operations["memory.extraction_status"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.extraction_status_mine": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Each of the caller's own batches; any other id comes back in `unknown`.
         * @description Each of the caller's own batches; any other id comes back in `unknown`.
         */
        post: operations["memory.extraction_status_mine"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * One memory by key; text that reads as high is served here only, with an audit row.
         * @description One memory by key; text that reads as high is served here only, with an audit row.
         */
        post: operations["memory.get"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.recall": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Raw turns extractions read, by text, time window and role, newest first.
         * @description Raw turns extractions read, by text, time window and role, newest first.
         */
        post: operations["memory.recall"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Memories by meaning and by words, fused by reciprocal rank, in the caller's scope.
         * @description Memories by meaning and by words, fused by reciprocal rank, in the caller's scope.
         *     Text that reads as high is never returned.
         */
        post: operations["memory.search"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.set": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Write one fact the caller already knows; a changed value is a new version.
         * @description Write one fact the caller already knows; a changed value is a new version.
         */
        post: operations["memory.set"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.set_from_messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Store the turns as evidence, extract durable facts, and write them with verdicts.
         * @description Store the turns as evidence, extract durable facts, and write them with verdicts.
         *
         *     One request makes at most LOOM_MEMORY_EXTRACT_MAX_MODEL_CALLS model calls (100 by
         *     default), each tried at most twice: one per segment of the transcript
         *     (LOOM_MEMORY_EXTRACT_SIZE_SEGMENT_CHARS, 12,000 characters by default), one for the
         *     coverage sweep and one per verifier model when those are on; a typed record takes up to 3.
         *     A request that could take more is refused with 422 before any call: send its turns in
         *     smaller requests.
         */
        post: operations["memory.set_from_messages"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/memory.stack": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The scope's memories with no query: pinned first, then by confidence and recency, junk
         * @description The scope's memories with no query: pinned first, then by confidence and recency, junk
         *     left out (`filtered` counts it by class), a page at a time (`next_cursor`); the knowledge
         *     documents served to this agent are listed first, on the first page. Text that reads as high
         *     is never returned.
         */
        post: operations["memory.stack"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/model_calls.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Whether the org's model calls are on, as stored (every server reads it within
         * @description Whether the org's model calls are on, as stored (every server reads it within
         *     LOOM_MODEL_CALLS_POLICY_REFRESH_SECONDS).
         */
        post: operations["model_calls.get"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/model_calls.set": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Switch every model call of the org off (enabled: false) or back on; switched on, the
         * @description Switch every model call of the org off (enabled: false) or back on; switched on, the
         *     deferred requests held meanwhile go back to pending and run.
         */
        post: operations["model_calls.set"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/observe.crystallize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Mark the caller's user's observations of a session ready for the observe_extract
         * @description Mark the caller's user's observations of a session ready for the observe_extract
         *     worker; other users' observations of the same session id are left alone.
         */
        post: operations["observe.crystallize"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/observe.record": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Record one tool observation into the episodic plane, verbatim.
         * @description Record one tool observation into the episodic plane, verbatim.
         */
        post: operations["observe.record"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * One query over every plane, answered in sections: `memory` (junk left out), `knowledge`
         * @description One query over every plane, answered in sections: `memory` (junk left out), `knowledge`
         *     (the documents served to this agent) and `conversation` (conversation.search), each
         *     `top_k`; `sections` picks which. The agent defaults to '-'.
         */
        post: operations["search"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/session.brief_delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Forget a brief when its writer asks: its revisions go, and it serves nothing after.
         * @description Forget a brief when its writer asks: its revisions go, and it serves nothing after.
         */
        post: operations["session.brief_delete"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/session.brief_get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Load a brief by key, else the newest a session contributed to, else a project's newest.
         * @description Load a brief by key, else the newest a session contributed to, else a project's newest.
         */
        post: operations["session.brief_get"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/session.brief_list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The namespace's live briefs, newest first, one line each.
         * @description The namespace's live briefs, newest first, one line each.
         *
         *     A goal that reads as high lists empty (session.brief_get still shows the brief).
         */
        post: operations["session.brief_list"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/session.brief_save": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revise (or start) a brief from events, from the agent's own sections, or both.
         * @description Revise (or start) a brief from events, from the agent's own sections, or both.
         */
        post: operations["session.brief_save"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/system.whoami": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The identity the server resolved for this caller.
         * @description The identity the server resolved for this caller.
         */
        post: operations["system.whoami"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Error: {
            error: {
                code: string;
                message: string;
            };
        };
        /** PackedSection */
        PackedSection: {
            /** Name */
            name: string;
            /** Items */
            items: {
                [key: string]: unknown;
            }[];
        };
        /** TurnOut */
        TurnOut: {
            /** Msg Id */
            msg_id: string;
            /** Thread Id */
            thread_id: string;
            /** Role */
            role: string;
            /** Content */
            content: string;
            /** Reasoning */
            reasoning: string;
            /** Agent */
            agent: string;
            /** User Id */
            user_id: string;
            /** Run Id */
            run_id: string;
            /** Metadata */
            metadata: {
                [key: string]: unknown;
            };
            /** Tokens */
            tokens: number;
            /**
             * Ts
             * Format: date-time
             */
            ts: string;
        };
        /** ConversationHit */
        ConversationHit: {
            /** Msg Id */
            msg_id: string;
            /** Thread Id */
            thread_id: string;
            /** Role */
            role: string;
            /** Excerpt */
            excerpt: string;
            /** Similarity */
            similarity: number | null;
            /**
             * Score
             * @description The rank's score: the similarity (semantic), BM25 (lexical) or the fused reciprocal-rank score (hybrid); none on the substring fallback.
             * @default null
             */
            score?: number | null;
            /** Agent */
            agent: string;
            /** User Id */
            user_id: string;
            /** Run Id */
            run_id: string;
            /**
             * Ts
             * Format: date-time
             */
            ts: string;
            /** Namespace */
            namespace: string;
        };
        /** SavedRow */
        SavedRow: {
            /** Conversation Id */
            conversation_id: string;
            /** Message Id */
            message_id: string;
            /** Role */
            role: string;
            /** Excerpt */
            excerpt: string;
            /**
             * Score
             * @default null
             */
            score?: number | null;
            /** Saved At */
            saved_at: string | null;
            /**
             * Ts
             * Format: date-time
             */
            ts: string;
        };
        /** JobOut */
        JobOut: {
            /** Job Id */
            job_id: string;
            /**
             * Status
             * @enum {string}
             */
            status: "pending" | "running" | "done" | "failed";
            /** Kind */
            kind: string;
            /** User Id */
            user_id: string | null;
            /** Namespaces */
            namespaces: string[] | null;
            /** Purge */
            purge: boolean;
            /** Tombstoned */
            tombstoned: {
                [key: string]: number;
            };
            /** Removed */
            removed: {
                [key: string]: number;
            };
            /** Last Error */
            last_error: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Finished At */
            finished_at: string | null;
        };
        /** DocumentOut */
        DocumentOut: {
            /** Uri */
            uri: string;
            /** Title */
            title: string;
            /** Text */
            text: string;
            /** Tags */
            tags: string[];
            /** Author */
            author: string;
            /** Version */
            version: number;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
        };
        /** DocumentRow */
        DocumentRow: {
            /** Uri */
            uri: string;
            /** Title */
            title: string;
            /** Tags */
            tags: string[];
            /** Version */
            version: number;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
            /** Chars */
            chars: number;
        };
        /** KnowledgeHit */
        KnowledgeHit: {
            /** Namespace */
            namespace: string;
            /** Uri */
            uri: string;
            /** Title */
            title: string;
            /** Chunk */
            chunk: number;
            /** Excerpt */
            excerpt: string;
            /** Score */
            score: number;
            /** Tags */
            tags: string[];
        };
        /** Candidate */
        Candidate: {
            /** Candidate Id */
            candidate_id: string;
            /** Agent */
            agent: string;
            /** Key */
            key: string;
            /** Text */
            text: string;
            /** Support */
            support: number;
            rationale: components["schemas"]["Rationale"] | null;
            /**
             * Status
             * @enum {string}
             */
            status: "pending" | "promoted" | "rejected";
            /** Destination */
            destination: string;
            /** Decided By */
            decided_by: string;
            /** Decided At */
            decided_at: string | null;
            /** Note */
            note: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
        };
        /** Rationale */
        Rationale: {
            /** User Quote */
            user_quote: string;
            /** Rule Quote */
            rule_quote: string;
        };
        /** ActionIn */
        ActionIn: {
            /**
             * Action
             * @enum {string}
             */
            action: "demote" | "label" | "restore";
            /** Key */
            key: string;
            /**
             * User Id
             * @default -
             */
            user_id?: string;
            /**
             * Factor
             * @default 0.25
             */
            factor?: number;
            /**
             * Quality Class
             * @default null
             */
            quality_class?: ("trajectory" | "narration" | "tool_hint" | "code_location" | "probe" | "status" | "restatement") | null;
        };
        /** AppliedOut */
        AppliedOut: {
            /** Action */
            action: string;
            /** Key */
            key: string;
            /** User Id */
            user_id: string;
            /** Changed */
            changed: boolean;
            /** Confidence Before */
            confidence_before: number;
            /** Confidence After */
            confidence_after: number;
            /** Tags After */
            tags_after: string[];
        };
        /** UnknownOut */
        UnknownOut: {
            /** Key */
            key: string;
            /** User Id */
            user_id: string;
        };
        /** Passage */
        Passage: {
            /**
             * Source
             * @enum {string}
             */
            source: "memory" | "knowledge" | "transcript";
            /** Text */
            text: string;
            /** Score */
            score: number;
            /**
             * Key
             * @default null
             */
            key?: string | null;
            /**
             * Version
             * @default null
             */
            version?: number | null;
            /**
             * Uri
             * @default null
             */
            uri?: string | null;
            /**
             * Chunk
             * @default null
             */
            chunk?: number | null;
            /**
             * Whole Document
             * @default false
             */
            whole_document?: boolean;
        };
        /** EntryIn */
        EntryIn: {
            /** Key */
            key: string;
            /** Value */
            value: string;
            /** Tags */
            tags?: string[];
            /**
             * Valid At
             * @default null
             */
            valid_at?: string | null;
            /**
             * Observation Date
             * @default null
             */
            observation_date?: string | null;
            /**
             * Pin
             * @default null
             */
            pin?: boolean | null;
            /**
             * Lock
             * @default null
             */
            lock?: boolean | null;
        };
        /** WrittenOut */
        WrittenOut: {
            /** Key */
            key: string;
            /** Version */
            version: number;
            /** Conflict Verdict */
            conflict_verdict: string;
            /** Peers */
            peers: string[];
            /**
             * Memory Key
             * @default
             */
            memory_key?: string;
        };
        /** EvidenceTurn */
        EvidenceTurn: {
            /** Evidence Id */
            evidence_id: number;
            /** Version */
            version: number;
            /** Role */
            role: string;
            /** Name */
            name: string;
            /** Content */
            content: string;
            /** Span */
            span: string;
            /**
             * Ts
             * Format: date-time
             */
            ts: string;
            /** Session Id */
            session_id: string;
        };
        /** Batch */
        Batch: {
            /** Queue Id */
            queue_id: string;
            /** Status */
            status: string;
            /** Attempts */
            attempts: number;
            /** Sizes */
            sizes: {
                [key: string]: unknown;
            };
            /** Last Error */
            last_error: string;
            /**
             * Held Reason
             * @default
             */
            held_reason?: string;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
        };
        /** MemoryOut */
        MemoryOut: {
            /** Key */
            key: string;
            /** Value */
            value: string;
            /** Kind */
            kind: string;
            /** Tags */
            tags: string[];
            /** Version */
            version: number;
            /** User Id */
            user_id: string;
            /** Pinned */
            pinned: boolean;
            /** Locked */
            locked: boolean;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
            /** Confidence */
            confidence: number;
        };
        /** RecallTurn */
        RecallTurn: {
            /** Evidence Id */
            evidence_id: number;
            /** User Id */
            user_id: string;
            /** Agent */
            agent: string;
            /** Session Id */
            session_id: string;
            /** Role */
            role: string;
            /** Name */
            name: string;
            /** Content */
            content: string;
            /**
             * Ts
             * Format: date-time
             */
            ts: string;
        };
        /** MemoryHit */
        MemoryHit: {
            /** Key */
            key: string;
            /** Value */
            value: string;
            /** Score */
            score: number;
            /** Tags */
            tags: string[];
            /** User Id */
            user_id: string;
            /** Version */
            version: number;
            /** Kind */
            kind: string;
            /** Confidence */
            confidence: number;
        };
        /** Message */
        Message: {
            /**
             * Role
             * @enum {string}
             */
            role: "user" | "assistant" | "system" | "tool";
            /** Content */
            content: string;
            /**
             * Timestamp
             * @default null
             */
            timestamp?: string | null;
            /**
             * Name
             * @default
             */
            name?: string;
        };
        /** StackDocument */
        StackDocument: {
            /** Uri */
            uri: string;
            /** Title */
            title: string;
            /** Tags */
            tags: string[];
            /** Version */
            version: number;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
            /** Chars */
            chars: number;
        };
        /** StackMemory */
        StackMemory: {
            /** Key */
            key: string;
            /** Value */
            value: string;
            /** Tags */
            tags: string[];
            /** User Id */
            user_id: string;
            /** Version */
            version: number;
            /** Kind */
            kind: string;
            /** Pinned */
            pinned: boolean;
            /** Confidence */
            confidence: number;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
        };
        /**
         * BriefSections
         * @description The structured brief, as agents write it and as the model answers it.
         */
        BriefSections: {
            /**
             * Goal
             * @default
             */
            goal?: string;
            /**
             * Status
             * @default
             */
            status?: string;
            /** Decisions */
            decisions?: string[];
            /** Dead Ends */
            dead_ends?: string[];
            /** Done */
            done?: string[];
            /** Open Questions */
            open_questions?: string[];
            /** Next Steps */
            next_steps?: string[];
            /** Key Files */
            key_files?: string[];
            /** Constraints */
            constraints?: string[];
            /** Pointers */
            pointers?: string[];
        };
        /** SessionBriefSummary */
        SessionBriefSummary: {
            /** Brief Key */
            brief_key: string;
            /** Revision */
            revision: number;
            /** Agent */
            agent: string;
            /** Goal */
            goal: string;
            /** Project */
            project: string;
            /** Branch */
            branch: string;
            /**
             * Updated At
             * Format: date-time
             */
            updated_at: string;
            /** Age Seconds */
            age_seconds: number;
        };
        /** BriefEvent */
        BriefEvent: {
            /**
             * Kind
             * @enum {string}
             */
            kind: "user" | "assistant" | "edit" | "command" | "error" | "read" | "search" | "tool" | "note" | "summary";
            /**
             * Text
             * @default
             */
            text?: string;
            /**
             * Ts
             * @default null
             */
            ts?: string | null;
            /** Files */
            files?: string[];
            /**
             * Tool
             * @default
             */
            tool?: string;
        };
        /** SessionBriefStats */
        SessionBriefStats: {
            /**
             * Events
             * @default 0
             */
            events?: number;
            /**
             * Windows
             * @default 0
             */
            windows?: number;
            /**
             * Windows Failed
             * @default 0
             */
            windows_failed?: number;
            /**
             * Event Chars
             * @default 0
             */
            event_chars?: number;
            /**
             * Brief Chars
             * @default 0
             */
            brief_chars?: number;
            /**
             * Tokens In
             * @default 0
             */
            tokens_in?: number;
            /**
             * Tokens Out
             * @default 0
             */
            tokens_out?: number;
            /**
             * Model
             * @default
             */
            model?: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    "context.pack": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /**
                     * Query
                     * @default
                     */
                    query?: string;
                    /**
                     * Budget Tokens
                     * @default 2000
                     */
                    budget_tokens?: number;
                    /**
                     * Include Memories
                     * @default true
                     */
                    include_memories?: boolean;
                    /**
                     * Include Knowledge
                     * @default true
                     */
                    include_knowledge?: boolean;
                    /**
                     * Brief Key
                     * @default
                     */
                    brief_key?: string;
                    /**
                     * Project
                     * @default
                     */
                    project?: string;
                    /**
                     * Branch
                     * @default
                     */
                    branch?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Thread Id
                     * @default null
                     */
                    thread_id?: string | null;
                    /**
                     * Recent Turns
                     * @default 0
                     */
                    recent_turns?: number;
                    /**
                     * Include Conversation
                     * @default false
                     */
                    include_conversation?: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Text */
                        text: string;
                        /** Sections */
                        sections: components["schemas"]["PackedSection"][];
                        /** Tokens */
                        tokens: number;
                        /** Truncated */
                        truncated: boolean;
                        /** Pending Extraction */
                        pending_extraction: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.append": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Thread Id */
                    thread_id: string;
                    /**
                     * Msg Id
                     * @default
                     */
                    msg_id?: string;
                    /**
                     * Role
                     * @enum {string}
                     */
                    role: "user" | "assistant" | "system" | "tool";
                    /** Content */
                    content: string;
                    /**
                     * Reasoning
                     * @default
                     */
                    reasoning?: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /** Metadata */
                    metadata?: {
                        [key: string]: unknown;
                    };
                    /**
                     * Tokens
                     * @default 0
                     */
                    tokens?: number;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Msg Id */
                        msg_id: string;
                        /**
                         * Ts
                         * Format: date-time
                         */
                        ts: string;
                        /** Stored */
                        stored: boolean;
                        /**
                         * Reason
                         * @enum {string}
                         */
                        reason: "" | "duplicate" | "logging_disabled" | "deleted";
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.compact": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Thread Id */
                    thread_id: string;
                    /**
                     * Keep Recent
                     * @default 10
                     */
                    keep_recent?: number;
                    /**
                     * Min To Compact
                     * @default 4
                     */
                    min_to_compact?: number;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Compacted */
                        compacted: boolean;
                        /** Messages Summarized */
                        messages_summarized: number;
                        /** Summary Msg Id */
                        summary_msg_id: string;
                        /** Tokens In */
                        tokens_in: number;
                        /** Tokens Out */
                        tokens_out: number;
                        /** Reason */
                        reason: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.create": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Thread Id */
                    thread_id: string;
                    /**
                     * Title
                     * @default
                     */
                    title?: string;
                    /** Metadata */
                    metadata?: {
                        [key: string]: unknown;
                    };
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Thread Id */
                        thread_id: string;
                        /**
                         * Created At
                         * Format: date-time
                         */
                        created_at: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Thread Id */
                    thread_id: string;
                    /** Confirm Thread Id */
                    confirm_thread_id: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /**
                         * Tombstoned At
                         * Format: date-time
                         */
                        tombstoned_at: string;
                        /** Thread Id */
                        thread_id: string;
                        /** Rows Affected */
                        rows_affected: {
                            [key: string]: number;
                        };
                        /** Total */
                        total: number;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Thread Id */
                    thread_id: string;
                    /**
                     * Include Messages
                     * @default false
                     */
                    include_messages?: boolean;
                    /**
                     * Limit
                     * @default 100
                     */
                    limit?: number;
                    /**
                     * Offset
                     * @default 0
                     */
                    offset?: number;
                    /**
                     * Order
                     * @default asc
                     * @enum {string}
                     */
                    order?: "asc" | "desc";
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Found */
                        found: boolean;
                        /** Thread Id */
                        thread_id: string;
                        /** Title */
                        title: string;
                        /** Metadata */
                        metadata: {
                            [key: string]: unknown;
                        };
                        /** Run Id */
                        run_id: string;
                        /** User Id */
                        user_id: string;
                        /** Agent */
                        agent: string;
                        /** Created At */
                        created_at: string | null;
                        /** Updated At */
                        updated_at: string | null;
                        /** Msg Count */
                        msg_count: number;
                        /** Messages */
                        messages: components["schemas"]["TurnOut"][];
                        /** Next Cursor */
                        next_cursor: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.get_logging": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Namespace */
                        namespace: string;
                        /** Enabled */
                        enabled: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Thread Id */
                    thread_id: string;
                    /**
                     * Run Id
                     * @default null
                     */
                    run_id?: string | null;
                    /**
                     * Limit
                     * @default 100
                     */
                    limit?: number;
                    /**
                     * Cursor
                     * @default null
                     */
                    cursor?: string | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Rows */
                        rows: components["schemas"]["TurnOut"][];
                        /** Next Cursor */
                        next_cursor: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.list_saved_messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** User Id */
                    user_id: string;
                    /**
                     * Conversation Id
                     * @default null
                     */
                    conversation_id?: string | null;
                    /**
                     * Limit
                     * @default 50
                     */
                    limit?: number;
                    /**
                     * Cursor
                     * @default null
                     */
                    cursor?: string | null;
                    /**
                     * Fields
                     * @default null
                     */
                    fields?: string[] | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Rows */
                        rows: {
                            [key: string]: unknown;
                        }[];
                        /** Next Cursor */
                        next_cursor: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.save_message": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Conversation Id */
                    conversation_id: string;
                    /** Message Id */
                    message_id: string;
                    /**
                     * Role
                     * @enum {string}
                     */
                    role: "user" | "assistant";
                    /** Content */
                    content: string;
                    /** User Id */
                    user_id: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Conversation Id */
                        conversation_id: string;
                        /** Message Id */
                        message_id: string;
                        /** Indexed */
                        indexed: boolean;
                        /**
                         * Reason
                         * @enum {string}
                         */
                        reason: "" | "duplicate" | "owner_mismatch" | "deleted" | "unsupported_role" | "embed_failed" | "high_sensitivity";
                        /**
                         * Ts
                         * Format: date-time
                         */
                        ts: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.saved_status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** User Id */
                    user_id: string;
                    /** Conversation Id */
                    conversation_id: string;
                    /** Message Ids */
                    message_ids: string[];
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Saved */
                        saved: string[];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Query */
                    query: string;
                    /**
                     * Thread Id
                     * @default null
                     */
                    thread_id?: string | null;
                    /**
                     * Run Id
                     * @default null
                     */
                    run_id?: string | null;
                    /**
                     * Role
                     * @default null
                     */
                    role?: ("user" | "assistant" | "system" | "tool") | null;
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /**
                     * Top K
                     * @default 20
                     */
                    top_k?: number;
                    /**
                     * Namespace Scope
                     * @default all_mine
                     * @enum {string}
                     */
                    namespace_scope?: "this" | "all_mine";
                    /**
                     * Search Mode
                     * @description semantic: cosine similarity of each turn's first 2,048 characters, over the floor; lexical: BM25 over each turn with its date and neighbours; hybrid: the turn's vector, its vector read after the turn before it, and the BM25 leg, fused by reciprocal rank (no floor).
                     * @default semantic
                     * @enum {string}
                     */
                    search_mode?: "semantic" | "lexical" | "hybrid";
                    /**
                     * Lexical Weight
                     * @description Weight of the BM25 leg in the hybrid fusion; 1.0 = equal weight, 0 = the vectors alone (no BM25 read).
                     * @default 1
                     */
                    lexical_weight?: number;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Hits */
                        hits: components["schemas"]["ConversationHit"][];
                        /** Namespaces Skipped */
                        namespaces_skipped: string[];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.search_saved_messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** User Id */
                    user_id: string;
                    /** Query */
                    query: string;
                    /**
                     * Conversation Id
                     * @default null
                     */
                    conversation_id?: string | null;
                    /**
                     * Role
                     * @default null
                     */
                    role?: ("user" | "assistant") | null;
                    /**
                     * Top K
                     * @default 20
                     */
                    top_k?: number;
                    /**
                     * Search Mode
                     * @default hybrid
                     * @enum {string}
                     */
                    search_mode?: "hybrid" | "semantic" | "lexical";
                    /**
                     * Lexical Weight
                     * @default 1
                     */
                    lexical_weight?: number;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Hits */
                        hits: components["schemas"]["SavedRow"][];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.set_logging": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Enabled */
                    enabled: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Namespace */
                        namespace: string;
                        /** Enabled */
                        enabled: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.threads": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /**
                     * Agent
                     * @default *
                     */
                    agent?: string;
                    /**
                     * Window Days
                     * @default 30
                     */
                    window_days?: number;
                    /**
                     * Limit
                     * @default 30
                     */
                    limit?: number;
                    /**
                     * Offset
                     * @default 0
                     */
                    offset?: number;
                    /**
                     * Fields
                     * @default null
                     */
                    fields?: string[] | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Threads */
                        threads: {
                            [key: string]: unknown;
                        }[];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.unsave_message": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Conversation Id */
                    conversation_id: string;
                    /** Message Id */
                    message_id: string;
                    /** User Id */
                    user_id: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Conversation Id */
                        conversation_id: string;
                        /** Message Id */
                        message_id: string;
                        /** Found */
                        found: boolean;
                        /** Removed */
                        removed: boolean;
                        /**
                         * Ts
                         * Format: date-time
                         */
                        ts: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "conversation.update": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Thread Id */
                    thread_id: string;
                    /**
                     * Title
                     * @default null
                     */
                    title?: string | null;
                    /**
                     * Metadata
                     * @default null
                     */
                    metadata?: {
                        [key: string]: unknown;
                    } | null;
                    /**
                     * Run Id
                     * @default null
                     */
                    run_id?: string | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Updated */
                        updated: boolean;
                        /** Thread Id */
                        thread_id: string;
                        /** Updated At */
                        updated_at: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "erasure.export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /**
                     * Kind
                     * @enum {string}
                     */
                    kind: "user" | "namespace_list";
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /**
                     * Namespace
                     * @default null
                     */
                    namespace?: string | null;
                    /**
                     * Namespaces
                     * @default null
                     */
                    namespaces?: string[] | null;
                    /**
                     * Include Tombstoned
                     * @default true
                     */
                    include_tombstoned?: boolean;
                    /**
                     * Cursor
                     * @default null
                     */
                    cursor?: string | null;
                    /**
                     * Limit
                     * @default 1000
                     */
                    limit?: number;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Subject */
                        subject: {
                            [key: string]: unknown;
                        };
                        /** Tables */
                        tables: {
                            [key: string]: {
                                [key: string]: unknown;
                            }[];
                        };
                        /** Not Exported */
                        not_exported: {
                            [key: string]: string;
                        };
                        /** Next Cursor */
                        next_cursor: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "erasure.request": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /**
                     * Kind
                     * @enum {string}
                     */
                    kind: "user" | "namespace_list";
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /**
                     * Namespace
                     * @default null
                     */
                    namespace?: string | null;
                    /**
                     * Namespaces
                     * @default null
                     */
                    namespaces?: string[] | null;
                    /**
                     * Purge
                     * @default false
                     */
                    purge?: boolean;
                    /**
                     * Defer
                     * @default false
                     */
                    defer?: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Job Id */
                        job_id: string;
                        /**
                         * Status
                         * @enum {string}
                         */
                        status: "pending" | "running" | "done" | "failed";
                        /** Kind */
                        kind: string;
                        /** User Id */
                        user_id: string | null;
                        /** Namespaces */
                        namespaces: string[] | null;
                        /** Purge */
                        purge: boolean;
                        /** Tombstoned */
                        tombstoned: {
                            [key: string]: number;
                        };
                        /** Removed */
                        removed: {
                            [key: string]: number;
                        };
                        /** Last Error */
                        last_error: string;
                        /**
                         * Created At
                         * Format: date-time
                         */
                        created_at: string;
                        /** Finished At */
                        finished_at: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "erasure.status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Job Id */
                    job_id: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Found */
                        found: boolean;
                        job: components["schemas"]["JobOut"] | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "extraction_policy.clear": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /**
                     * Scope
                     * @enum {string}
                     */
                    scope: "org" | "namespace";
                    /**
                     * Namespace
                     * @default
                     */
                    namespace?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Scope */
                        scope: string;
                        /** Namespace */
                        namespace: string;
                        /** Cleared */
                        cleared: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "extraction_policy.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /**
                     * Scope
                     * @enum {string}
                     */
                    scope: "org" | "namespace";
                    /**
                     * Namespace
                     * @default
                     */
                    namespace?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Scope */
                        scope: string;
                        /** Namespace */
                        namespace: string;
                        /** Policy */
                        policy: string;
                        /** Effective */
                        effective: string;
                        /**
                         * Namespace Policies
                         * @default []
                         */
                        namespace_policies?: string[];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "extraction_policy.set": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /**
                     * Scope
                     * @enum {string}
                     */
                    scope: "org" | "namespace";
                    /**
                     * Namespace
                     * @default
                     */
                    namespace?: string;
                    /** Policy */
                    policy: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Scope */
                        scope: string;
                        /** Namespace */
                        namespace: string;
                        /** Policy */
                        policy: string;
                        /** Effective */
                        effective: string;
                        /**
                         * Namespace Policies
                         * @default []
                         */
                        namespace_policies?: string[];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "knowledge.delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Uri */
                    uri: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Uri */
                        uri: string;
                        /** Found */
                        found: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "knowledge.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Uri */
                    uri: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Found */
                        found: boolean;
                        document: components["schemas"]["DocumentOut"] | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "knowledge.list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Tags */
                    tags?: string[];
                    /**
                     * Uri Prefix
                     * @default
                     */
                    uri_prefix?: string;
                    /**
                     * Limit
                     * @default 50
                     */
                    limit?: number;
                    /**
                     * Cursor
                     * @default null
                     */
                    cursor?: string | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Documents */
                        documents: components["schemas"]["DocumentRow"][];
                        /** Next Cursor */
                        next_cursor: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "knowledge.publish": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Uri */
                    uri: string;
                    /**
                     * Title
                     * @default
                     */
                    title?: string;
                    /** Text */
                    text: string;
                    /** Tags */
                    tags?: string[];
                    /**
                     * If Version
                     * @description Publish only if the stored version is this one (0: none is).
                     * @default null
                     */
                    if_version?: number | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Uri */
                        uri: string;
                        /** Version */
                        version: number;
                        /** Changed */
                        changed: boolean;
                        /** Chunks */
                        chunks: number;
                        /** Chunks Withheld */
                        chunks_withheld: number;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "knowledge.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /**
                     * Namespace
                     * @description The namespace searched, or "all_mine": every namespace of the org the caller reads, up to the fan-out cap.
                     */
                    namespace: string;
                    /** Query */
                    query: string;
                    /**
                     * Top K
                     * @default 10
                     */
                    top_k?: number;
                    /**
                     * Search Mode
                     * @default hybrid
                     * @enum {string}
                     */
                    search_mode?: "hybrid" | "semantic" | "lexical";
                    /** Tags */
                    tags?: string[];
                    /**
                     * Uri Prefix
                     * @default
                     */
                    uri_prefix?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Hits */
                        hits: components["schemas"]["KnowledgeHit"][];
                        /** Namespaces Skipped */
                        namespaces_skipped?: string[];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "learnings.list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /**
                     * Status
                     * @default null
                     */
                    status?: ("pending" | "promoted" | "rejected") | null;
                    /**
                     * Agent
                     * @default null
                     */
                    agent?: string | null;
                    /**
                     * Limit
                     * @default 50
                     */
                    limit?: number;
                    /**
                     * Cursor
                     * @default null
                     */
                    cursor?: string | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Candidates */
                        candidates: components["schemas"]["Candidate"][];
                        /** Next Cursor */
                        next_cursor: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "learnings.review": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Candidate Id */
                    candidate_id: string;
                    /**
                     * Decision
                     * @enum {string}
                     */
                    decision: "promote" | "reject";
                    /**
                     * Destination
                     * @default knowledge
                     * @enum {string}
                     */
                    destination?: "knowledge" | "memory";
                    /**
                     * Note
                     * @default
                     */
                    note?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Found */
                        found: boolean;
                        /** Candidate Id */
                        candidate_id: string;
                        /**
                         * Status
                         * @default null
                         */
                        status?: ("pending" | "promoted" | "rejected") | null;
                        /**
                         * Version
                         * @default 0
                         */
                        version?: number;
                        /**
                         * Destination
                         * @default
                         */
                        destination?: string;
                        /**
                         * Uri
                         * @default
                         */
                        uri?: string;
                        /**
                         * Key
                         * @default
                         */
                        key?: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.apply": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Actions */
                    actions: components["schemas"]["ActionIn"][];
                    /**
                     * Dry Run
                     * @default false
                     */
                    dry_run?: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Applied */
                        applied: components["schemas"]["AppliedOut"][];
                        /** Unknown */
                        unknown: components["schemas"]["UnknownOut"][];
                        /** Dry Run */
                        dry_run: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.ask": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /**
                     * Agent
                     * @default *
                     */
                    agent?: string;
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /** Question */
                    question: string;
                    /**
                     * Top K
                     * @default 8
                     */
                    top_k?: number;
                    /**
                     * Synthesize
                     * @default false
                     */
                    synthesize?: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Passages */
                        passages: components["schemas"]["Passage"][];
                        /** Pending Extraction */
                        pending_extraction: boolean;
                        /**
                         * Answer
                         * @default null
                         */
                        answer?: string | null;
                        /**
                         * Answer Error
                         * @default null
                         */
                        answer_error?: string | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.blacklist": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /**
                     * Namespace
                     * @default
                     */
                    namespace?: string;
                    /** Pattern */
                    pattern: string;
                    /**
                     * Remove
                     * @default false
                     */
                    remove?: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Pattern */
                        pattern: string;
                        /** Namespace */
                        namespace: string;
                        /** Listed */
                        listed: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.bulk_set": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /** Entries */
                    entries: components["schemas"]["EntryIn"][];
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Written */
                        written: components["schemas"]["WrittenOut"][];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /** Key */
                    key: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Deleted */
                        deleted: boolean;
                        /** Key */
                        key: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.evidence": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /** Key */
                    key: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Key */
                        key: string;
                        /** Turns */
                        turns: components["schemas"]["EvidenceTurn"][];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.extraction_retry_mine": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Queue Ids */
                    queue_ids: string[];
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Requeued */
                        requeued: string[];
                        /** Expired */
                        expired: string[];
                        /** Model Calls Off */
                        model_calls_off: string[];
                        /** Left Alone */
                        left_alone: string[];
                        /** Unknown */
                        unknown: string[];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.extraction_status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * Queue Ids
                     * @default null
                     */
                    queue_ids?: string[] | null;
                    /**
                     * Status
                     * @default null
                     */
                    status?: ("pending" | "running" | "held" | "done" | "failed") | null;
                    /**
                     * Limit
                     * @default 50
                     */
                    limit?: number;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Batches */
                        batches: components["schemas"]["Batch"][];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.extraction_status_mine": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Queue Ids */
                    queue_ids: string[];
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Batches */
                        batches: components["schemas"]["Batch"][];
                        /** Unknown */
                        unknown: string[];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /** Key */
                    key: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Found */
                        found: boolean;
                        memory: components["schemas"]["MemoryOut"] | null;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.recall": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * Query
                     * @default
                     */
                    query?: string;
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /**
                     * Since
                     * @default null
                     */
                    since?: string | null;
                    /**
                     * Until
                     * @default null
                     */
                    until?: string | null;
                    /**
                     * Role
                     * @default null
                     */
                    role?: ("user" | "assistant" | "system" | "tool") | null;
                    /**
                     * Limit
                     * @default 20
                     */
                    limit?: number;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Turns */
                        turns: components["schemas"]["RecallTurn"][];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Query */
                    query: string;
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /**
                     * Top K
                     * @default 10
                     */
                    top_k?: number;
                    /**
                     * Search Mode
                     * @default hybrid
                     * @enum {string}
                     */
                    search_mode?: "hybrid" | "semantic" | "lexical";
                    /**
                     * Include Chunks
                     * @default true
                     */
                    include_chunks?: boolean;
                    /**
                     * Quality Filter
                     * @default false
                     */
                    quality_filter?: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Hits */
                        hits: components["schemas"]["MemoryHit"][];
                        /** Filtered */
                        filtered?: {
                            [key: string]: number;
                        };
                        /**
                         * Pending Extraction
                         * @default false
                         */
                        pending_extraction?: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.set": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Key */
                    key: string;
                    /** Value */
                    value: string;
                    /** Tags */
                    tags?: string[];
                    /**
                     * Valid At
                     * @default null
                     */
                    valid_at?: string | null;
                    /**
                     * Observation Date
                     * @default null
                     */
                    observation_date?: string | null;
                    /**
                     * Pin
                     * @default null
                     */
                    pin?: boolean | null;
                    /**
                     * Lock
                     * @default null
                     */
                    lock?: boolean | null;
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Written */
                        written: components["schemas"]["WrittenOut"][];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.set_from_messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /** Messages */
                    messages: components["schemas"]["Message"][];
                    /** Last Messages */
                    last_messages?: components["schemas"]["Message"][];
                    /**
                     * Observation Date
                     * @default null
                     */
                    observation_date?: string | null;
                    /**
                     * Request Time
                     * @default null
                     */
                    request_time?: string | null;
                    /** Extra Tags */
                    extra_tags?: string[];
                    /**
                     * Extraction Instructions
                     * @default
                     */
                    extraction_instructions?: string;
                    /**
                     * Record Schema
                     * @default null
                     */
                    record_schema?: {
                        [key: string]: unknown;
                    } | null;
                    /**
                     * Memory Key
                     * @default
                     */
                    memory_key?: string;
                    /**
                     * Valid At
                     * @default null
                     */
                    valid_at?: string | null;
                    /** Recalled Keys */
                    recalled_keys?: string[];
                    /** Session Values */
                    session_values?: string[];
                    /**
                     * Pipeline Steps
                     * @default null
                     */
                    pipeline_steps?: string[] | null;
                    /**
                     * Defer
                     * @default null
                     */
                    defer?: boolean | null;
                    /**
                     * Agent Learnings
                     * @default null
                     */
                    agent_learnings?: boolean | null;
                    /**
                     * Request Id
                     * @default
                     */
                    request_id?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Written */
                        written: components["schemas"]["WrittenOut"][];
                        /**
                         * Deferred
                         * @default false
                         */
                        deferred?: boolean;
                        /**
                         * Deferred By
                         * @default
                         */
                        deferred_by?: string;
                        /**
                         * Queue Id
                         * @default
                         */
                        queue_id?: string;
                        /**
                         * Tokens In
                         * @default 0
                         */
                        tokens_in?: number;
                        /**
                         * Tokens Out
                         * @default 0
                         */
                        tokens_out?: number;
                        /**
                         * Cached Tokens In
                         * @default 0
                         */
                        cached_tokens_in?: number;
                        /**
                         * Response Cache Hits
                         * @default 0
                         */
                        response_cache_hits?: number;
                        /**
                         * Response Cache Tokens In
                         * @default 0
                         */
                        response_cache_tokens_in?: number;
                        /**
                         * Segments
                         * @default 0
                         */
                        segments?: number;
                        /**
                         * Segmenter
                         * @default whole
                         */
                        segmenter?: string;
                        /**
                         * Forgotten
                         * @default 0
                         */
                        forgotten?: number;
                        /** Forgotten Keys */
                        forgotten_keys?: string[];
                        /** Evidence Ids */
                        evidence_ids?: number[];
                        /**
                         * Learning Candidates
                         * @default 0
                         */
                        learning_candidates?: number;
                        /** Stage Ms */
                        stage_ms?: {
                            [key: string]: number;
                        };
                        /**
                         * Observation Date Source
                         * @default
                         * @enum {string}
                         */
                        observation_date_source?: "caller" | "request_time" | "";
                        /** Stubbed Fields */
                        stubbed_fields?: string[];
                        /** Pipeline Errors */
                        pipeline_errors?: string[];
                        /**
                         * Under Operator Policy
                         * @default false
                         */
                        under_operator_policy?: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "memory.stack": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /**
                     * Limit
                     * @default 50
                     */
                    limit?: number;
                    /**
                     * Cursor
                     * @default null
                     */
                    cursor?: string | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Documents */
                        documents: components["schemas"]["StackDocument"][];
                        /** Memories */
                        memories: components["schemas"]["StackMemory"][];
                        /** Filtered */
                        filtered: {
                            [key: string]: number;
                        };
                        /** Next Cursor */
                        next_cursor: string | null;
                        /** Pending Extraction */
                        pending_extraction: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "model_calls.get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Org */
                        org: string;
                        /** Enabled */
                        enabled: boolean;
                        /**
                         * Changed
                         * @default false
                         */
                        changed?: boolean;
                        /**
                         * Released
                         * @default 0
                         */
                        released?: number;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "model_calls.set": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Enabled */
                    enabled: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Org */
                        org: string;
                        /** Enabled */
                        enabled: boolean;
                        /**
                         * Changed
                         * @default false
                         */
                        changed?: boolean;
                        /**
                         * Released
                         * @default 0
                         */
                        released?: number;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "observe.crystallize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Session Id */
                    session_id: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Session Id */
                        session_id: string;
                        /** Observations */
                        observations: number;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "observe.record": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /** Session Id */
                    session_id: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /**
                     * Tool
                     * @default
                     */
                    tool?: string;
                    /** Action */
                    action: string;
                    /**
                     * Input
                     * @default
                     */
                    input?: string;
                    /**
                     * Output
                     * @default
                     */
                    output?: string;
                    /** Files */
                    files?: string[];
                    /**
                     * Ts
                     * @default null
                     */
                    ts?: string | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Observation Id */
                        observation_id: number;
                        /** Session Id */
                        session_id: string;
                        /**
                         * Ts
                         * Format: date-time
                         */
                        ts: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    search: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /**
                     * Agent
                     * @default -
                     */
                    agent?: string;
                    /**
                     * User Id
                     * @default null
                     */
                    user_id?: string | null;
                    /** Query */
                    query: string;
                    /**
                     * Top K
                     * @default 5
                     */
                    top_k?: number;
                    /** Sections */
                    sections?: ("memory" | "knowledge" | "conversation")[];
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Memory */
                        memory: {
                            [key: string]: unknown;
                        }[];
                        /** Knowledge */
                        knowledge: {
                            [key: string]: unknown;
                        }[];
                        /** Conversation */
                        conversation: {
                            [key: string]: unknown;
                        }[];
                        /** Pending Extraction */
                        pending_extraction: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "session.brief_delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /** Brief Key */
                    brief_key: string;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Deleted */
                        deleted: boolean;
                        /** Brief Key */
                        brief_key: string;
                        /** Revision */
                        revision: number;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "session.brief_get": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /**
                     * Brief Key
                     * @default
                     */
                    brief_key?: string;
                    /**
                     * From Session
                     * @default
                     */
                    from_session?: string;
                    /**
                     * Project
                     * @default
                     */
                    project?: string;
                    /**
                     * Revision
                     * @default 0
                     */
                    revision?: number;
                    /**
                     * Include Sections
                     * @default false
                     */
                    include_sections?: boolean;
                    /**
                     * Full
                     * @default false
                     */
                    full?: boolean;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Found */
                        found: boolean;
                        /**
                         * Brief Key
                         * @default
                         */
                        brief_key?: string;
                        /**
                         * Revision
                         * @default 0
                         */
                        revision?: number;
                        /**
                         * Rendered
                         * @default
                         */
                        rendered?: string;
                        /** @default null */
                        sections?: components["schemas"]["BriefSections"] | null;
                        /**
                         * Project
                         * @default
                         */
                        project?: string;
                        /**
                         * Branch
                         * @default
                         */
                        branch?: string;
                        /**
                         * Head Sha
                         * @default
                         */
                        head_sha?: string;
                        /**
                         * Author
                         * @default
                         */
                        author?: string;
                        /**
                         * Trigger
                         * @default
                         */
                        trigger?: string;
                        /**
                         * Actor
                         * @default
                         */
                        actor?: string;
                        /** Source Sessions */
                        source_sessions?: string[];
                        /**
                         * Updated At
                         * @default null
                         */
                        updated_at?: string | null;
                        /**
                         * Age Seconds
                         * @default 0
                         */
                        age_seconds?: number;
                        /**
                         * Revisions
                         * @default 0
                         */
                        revisions?: number;
                        /**
                         * Events Total
                         * @default 0
                         */
                        events_total?: number;
                        /**
                         * Source Chars
                         * @default 0
                         */
                        source_chars?: number;
                        /**
                         * Brief Chars
                         * @default 0
                         */
                        brief_chars?: number;
                        /**
                         * Deleted
                         * @default false
                         */
                        deleted?: boolean;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "session.brief_list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /**
                     * Project
                     * @default
                     */
                    project?: string;
                    /**
                     * Mine Only
                     * @default false
                     */
                    mine_only?: boolean;
                    /**
                     * From Session
                     * @default
                     */
                    from_session?: string;
                    /**
                     * Limit
                     * @default 10
                     */
                    limit?: number;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Briefs */
                        briefs: components["schemas"]["SessionBriefSummary"][];
                        /** Rendered */
                        rendered: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "session.brief_save": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Org */
                    org?: string;
                    /** Namespace */
                    namespace: string;
                    /** Agent */
                    agent: string;
                    /**
                     * User Id
                     * @default -
                     */
                    user_id?: string;
                    /**
                     * Session Id
                     * @default -
                     */
                    session_id?: string;
                    /**
                     * Run Id
                     * @default -
                     */
                    run_id?: string;
                    /**
                     * Brief Key
                     * @default
                     */
                    brief_key?: string;
                    /**
                     * Project
                     * @default
                     */
                    project?: string;
                    /**
                     * Repo
                     * @default
                     */
                    repo?: string;
                    /**
                     * Branch
                     * @default
                     */
                    branch?: string;
                    /**
                     * Head Sha
                     * @default
                     */
                    head_sha?: string;
                    /**
                     * Trigger
                     * @default manual
                     * @enum {string}
                     */
                    trigger?: "precompact" | "session_end" | "stop" | "manual" | "model";
                    /** Events */
                    events?: components["schemas"]["BriefEvent"][];
                    /** @default null */
                    sections?: components["schemas"]["BriefSections"] | null;
                    /**
                     * Event Cursor
                     * @default
                     */
                    event_cursor?: string;
                    /**
                     * If Revision
                     * @default null
                     */
                    if_revision?: number | null;
                    /**
                     * Use Llm
                     * @default null
                     */
                    use_llm?: boolean | null;
                };
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Brief Key */
                        brief_key: string;
                        /** Revision */
                        revision: number;
                        /** Changed */
                        changed: boolean;
                        /** Author */
                        author: string;
                        /** Reason */
                        reason: string;
                        /** Rendered */
                        rendered: string;
                        stats: components["schemas"]["SessionBriefStats"];
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    "system.whoami": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": Record<string, never>;
            };
        };
        responses: {
            /** @description The op's output */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** Org */
                        org: string;
                        /** Role */
                        role: string;
                        /** Namespace */
                        namespace: string | null;
                        /** Read Scope */
                        read_scope: string;
                        /** Read User Id */
                        read_user_id: string | null;
                        /** Auth */
                        auth: string;
                        ignored_args?: string[];
                    };
                };
            };
            /** @description Malformed JSON or a refused value */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The token's role, org, namespace or read scope does not allow it */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unknown op */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A compare-and-set or limit conflict */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than LOOM_MAX_REQUEST_BYTES (10 MB by default) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body failed validation */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The model provider failed */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A dependency is unavailable; try again */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
