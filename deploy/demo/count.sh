# Sourced by demo.sh (and by the deploy module's TestDemoCountsAnalyses):
# what the demo reads out of canaryd's answers, without jq.

# failed_analyses prints how many analyses of a backtest series ($1, the
# JSON of POST /v1/templates/{name}/backtests with every) are Failed. Each
# result's analysis starts {"id":…,"phase":…}; its metrics and their
# measurements have a "phase" of their own, which must not be counted.
failed_analyses() {
	grep -o '"analysis":{"id":"[^"]*","phase":"[A-Za-z]*"' "$1" | grep -c '"phase":"Failed"$' || true
}
