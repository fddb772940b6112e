-- An erasure that ran while a write for its subject was under way (a deferred replay, an
-- extraction waiting on its model) runs again once it ends: the late write is erased too.
ALTER TABLE loom.erasure_jobs ADD COLUMN rerun boolean NOT NULL DEFAULT false;
