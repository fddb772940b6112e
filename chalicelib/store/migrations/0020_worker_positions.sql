-- Where a worker that reads rows once, in order, stands: the repair of turns whose vector write
-- never ran reads each turn once, a minute after it was recorded (ts, msg_id of the last read).
CREATE TABLE loom.worker_positions (
    name text PRIMARY KEY,
    ts timestamptz NOT NULL,
    msg_id text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
