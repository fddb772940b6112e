-- Which titles the titler wrote (from the thread's turns), whatever made the thread row: an
-- erasure of those turns clears such a title, never one a person gave. A row the titler made
-- holds only its own titles.
ALTER TABLE loom.conversation_threads
    ADD COLUMN title_by_titler boolean NOT NULL DEFAULT false;
UPDATE loom.conversation_threads SET title_by_titler = true
    WHERE origin = 'titler' AND title <> '';
