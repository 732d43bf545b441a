-- The series a round or gate is one of (api.Analysis.Series): the calls
-- that make one analysis over time, such as the rounds one Argo Rollouts
-- AnalysisRun sends. Set when the analysis is created, never changed;
-- '' for an analysis started as one. The list filters on it (?series=),
-- newest first.
ALTER TABLE canaryd_analyses ADD COLUMN series text NOT NULL DEFAULT '';
CREATE INDEX canaryd_analyses_series ON canaryd_analyses (series, started_at DESC, id) WHERE series <> '';
