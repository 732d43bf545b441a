-- A request to terminate an analysis, made on any replica (DELETE) and
-- seen by the replica that runs it when it renews its leases.
ALTER TABLE canaryd_analyses ADD COLUMN terminate_requested boolean NOT NULL DEFAULT false;
