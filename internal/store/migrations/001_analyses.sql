-- canaryd's store: one row per analysis, its measurements, and the webhook
-- deliveries it still owes. Every write of an analysis' state is fenced by
-- its lease_token (see internal/store).

CREATE TABLE canaryd_analyses (
    id               text        PRIMARY KEY,
    created_at       timestamptz NOT NULL,
    -- What was asked for: a template's name, or the posted document (NULL
    -- when sealed into sealed) and its sha256 either way.
    template         text        NOT NULL DEFAULT '',
    document         bytea,
    document_sha256  text        NOT NULL DEFAULT '',
    -- Argument values; those of secret arguments read ***** here, their
    -- values are in sealed or not stored at all.
    args             jsonb       NOT NULL DEFAULT '{}',
    -- The webhook: its URL as shown (no userinfo, query redacted), the
    -- event types asked for; the URL itself is in sealed when it holds
    -- credentials.
    webhook_url      text        NOT NULL DEFAULT '',
    webhook_events   text[]      NOT NULL DEFAULT '{}',
    -- AES-256-GCM sealed secrets: secret argument values, the webhook URL,
    -- the document (see internal/store/seal.go).
    sealed           bytea,
    -- The state: phase, times, and the resource as last saved (counters,
    -- consecutive streaks, retained measurements).
    phase            text        NOT NULL,
    started_at       timestamptz NOT NULL,
    completed_at     timestamptz,
    state            jsonb       NOT NULL,
    -- version counts writes, the sequence a notification carries.
    version          bigint      NOT NULL DEFAULT 1,
    -- The lease: who runs the analysis, until when, and the token every
    -- write of state must carry.
    owner            text        NOT NULL DEFAULT '',
    lease_token      bigint      NOT NULL DEFAULT 1,
    lease_expires_at timestamptz NOT NULL,
    deliveries_owed  integer     NOT NULL DEFAULT 0
);

CREATE TABLE canaryd_measurements (
    analysis_id text        NOT NULL REFERENCES canaryd_analyses (id) ON DELETE CASCADE,
    metric      text        NOT NULL,
    -- idx numbers a metric's measurements from 0: a measurement taken
    -- again after its replica died is the same row.
    idx         integer     NOT NULL,
    phase       text        NOT NULL,
    finished_at timestamptz,
    body        jsonb       NOT NULL,
    PRIMARY KEY (analysis_id, metric, idx)
);

CREATE TABLE canaryd_deliveries (
    analysis_id  text        NOT NULL REFERENCES canaryd_analyses (id) ON DELETE CASCADE,
    -- webhook_id is chosen once per event: every attempt, on any replica,
    -- carries it.
    webhook_id   text        NOT NULL,
    seq          bigint      NOT NULL,
    event        jsonb       NOT NULL,
    created_at   timestamptz NOT NULL,
    delivered_at timestamptz,
    PRIMARY KEY (analysis_id, webhook_id)
);

-- Every write that bumps an analysis' version tells the replicas that
-- listen (LISTEN canaryd_analyses): the payload is "ID VERSION", small;
-- a reader fetches what changed.
CREATE FUNCTION canaryd_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('canaryd_analyses', NEW.id || ' ' || NEW.version);
    RETURN NULL;
END
$$;

CREATE TRIGGER canaryd_analyses_notify AFTER UPDATE OF version ON canaryd_analyses
    FOR EACH ROW WHEN (NEW.version <> OLD.version) EXECUTE FUNCTION canaryd_notify();
