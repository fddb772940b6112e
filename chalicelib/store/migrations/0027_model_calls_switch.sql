-- The org's model-calls switch (decision 0026): a row while an org's model calls are off.
CREATE TABLE loom.model_calls_off (
    org text PRIMARY KEY,
    switched_off_at timestamptz NOT NULL DEFAULT now()
);
