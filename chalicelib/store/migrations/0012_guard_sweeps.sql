-- Where the guard sweep stands. A row an earlier build embedded and indexed may hold text
-- today's guard (chalicelib/sensitivity.py) reads as high: a weaker guard let it in. The
-- guard_sweep worker reads every live embedding row once for each guard (`guard` is its
-- fingerprint), withdraws those that now read as high, and rewrites the windows and context
-- vectors around them. `position` is the primary key of the last row read.
CREATE TABLE loom.guard_sweeps (
    name text PRIMARY KEY,
    guard text NOT NULL,
    position text[],
    done boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL DEFAULT now()
);
