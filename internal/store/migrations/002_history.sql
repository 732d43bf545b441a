-- Indexes for the history's filters and order, and for claiming work.

-- The list's order, newest first, and started after/before.
CREATE INDEX canaryd_analyses_started ON canaryd_analyses (started_at DESC, id);
CREATE INDEX canaryd_analyses_phase ON canaryd_analyses (phase, started_at DESC, id);
CREATE INDEX canaryd_analyses_template ON canaryd_analyses (template, started_at DESC, id);
-- args @> '{"namespace":"shop"}'.
CREATE INDEX canaryd_analyses_args ON canaryd_analyses USING gin (args jsonb_path_ops);
-- Retention deletes by completion.
CREATE INDEX canaryd_analyses_completed ON canaryd_analyses (completed_at) WHERE completed_at IS NOT NULL;
-- Claim: leases of work left to do, by expiry; renew: by owner.
CREATE INDEX canaryd_analyses_claimable ON canaryd_analyses (lease_expires_at)
    WHERE completed_at IS NULL OR deliveries_owed > 0;
CREATE INDEX canaryd_analyses_owner ON canaryd_analyses (owner)
    WHERE completed_at IS NULL OR deliveries_owed > 0;
-- The deliveries still owed, in order.
CREATE INDEX canaryd_deliveries_owed ON canaryd_deliveries (analysis_id, seq) WHERE delivered_at IS NULL;
