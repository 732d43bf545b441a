#!/usr/bin/env bash
# canaryd's demo: a real Prometheus with backfilled Istio request data, the
# canaryd service in front of it, and the seed's success-rate template run
# live for a healthy canary (streamed) and a failing one (?wait=true).
# Exits 0 only if the healthy canary is Successful and the failing one Failed.
#
#   make demo              # builds bin/canaryd and runs this
#   DEMO_KEEP=1 make demo  # leaves Prometheus and canaryd running afterwards
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$root/.demo"
canaryd="$root/bin/canaryd"
template="$root/testdata/templates/success-rate.yaml"

# shellcheck source=count.sh
. "$root/deploy/demo/count.sh"

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

for tool in prometheus promtool curl go; do
	command -v "$tool" >/dev/null || { echo "demo: $tool is needed (prometheus and promtool: apt-get install -y prometheus)" >&2; exit 1; }
done
[ -x "$canaryd" ] || { echo "demo: $canaryd is missing: run 'make build' (or 'make demo')" >&2; exit 1; }

pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# free_port prints the first port from $1 on that nothing listens on.
free_port() {
	local p
	for ((p = $1; p < $1 + 500; p++)); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
	done
	echo "demo: no free port from $1" >&2; exit 1
}

# wait_for waits until $1 answers 200, or fails after 60 s.
wait_for() {
	for _ in $(seq 600); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "demo: $1 did not come up" >&2; exit 1
}

rm -rf "$work"; mkdir -p "$work"

say "Backfilling Prometheus with Istio request counters (echo-good: 0.5% 5xx, echo-bad: 5% 5xx)"
(cd "$root" && go run ./cmd/canaryd-fixtures) >"$work/fixture.om"
promtool tsdb create-blocks-from openmetrics "$work/fixture.om" "$work/tsdb" >/dev/null
printf 'global:\n  scrape_interval: 15s\n' >"$work/prometheus.yml"

prom_port="$(free_port 19090)"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
	--storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$prom_port" \
	>"$work/prometheus.log" 2>&1 &
pids+=($!)
prom="http://127.0.0.1:$prom_port"
wait_for "$prom/-/ready"
echo "Prometheus is up at $prom"

say "Starting canaryd serve"
api_port="$(free_port 18080)"
"$canaryd" serve --listen "127.0.0.1:$api_port" --prometheus-url "$prom" --prometheus-external-url "$prom" \
	--templates "$root/testdata/templates" \
	>"$work/canaryd.log" 2>&1 &
pids+=($!)
api="http://127.0.0.1:$api_port"
wait_for "$api/readyz"
echo "canaryd is up at $api (logs: .demo/canaryd.log); its page: $api/ui/"

say "The template: the seed's success-rate, its namespace an argument"
sed -n '/^apiVersion/,$p' "$template"

say "echo-bad, with ?wait=true in the background"
curl -sS -X POST -H 'Content-Type: application/yaml' --data-binary @"$template" \
	"$api/v1/analyses?wait=true&arg.namespace=echo-bad" >"$work/echo-bad.json" &
bad_pid=$!
echo "curl -X POST -H 'Content-Type: application/yaml' --data-binary @success-rate.yaml '$api/v1/analyses?wait=true&arg.namespace=echo-bad'"

say "echo-good, streamed (one event per measurement, 30 s apart)"
echo "curl -N -X POST -H 'Accept: application/x-ndjson' -H 'Content-Type: application/yaml' --data-binary @success-rate.yaml '$api/v1/analyses?arg.namespace=echo-good'"
curl -sS -N -X POST -H 'Accept: application/x-ndjson' -H 'Content-Type: application/yaml' \
	--data-binary @"$template" "$api/v1/analyses?arg.namespace=echo-good" | tee "$work/echo-good.ndjson" |
	while IFS= read -r line; do
		type="$(sed -n 's/^{"type":"\([a-z]*\)".*/\1/p' <<<"$line")"
		case "$type" in
		measurement)
			value="$(sed -n 's/.*"value":"\([^"]*\)".*/\1/p' <<<"$line")"
			phase="$(sed -n 's/.*"measurement":{"phase":"\([A-Za-z]*\)".*/\1/p' <<<"$line")"
			echo "  $(date -u +%H:%M:%S) measurement: value=$value phase=$phase"
			;;
		completed)
			echo "  $(date -u +%H:%M:%S) completed: phase=$(sed -n 's/.*"analysis":{[^}]*"phase":"\([A-Za-z]*\)".*/\1/p' <<<"$line")"
			;;
		esac
	done

wait "$bad_pid"

phase_of() { sed -n 's/^{"id":"[^"]*","phase":"\([A-Za-z]*\)".*/\1/p' "$1"; }
message_of() {
	sed -n 's/^{"id":"[^"]*","phase":"[A-Za-z]*","message":"\(\([^"\\]\|\\.\)*\)".*/\1/p' "$1" |
		sed -e 's/\\"/"/g' -e 's/\\u003e/>/g' -e 's/\\u003c/</g' -e 's/\\u0026/\&/g'
}
good="$(tail -n 1 "$work/echo-good.ndjson" | sed -n 's/.*"analysis":{"id":"[^"]*","phase":"\([A-Za-z]*\)".*/\1/p')"
bad="$(phase_of "$work/echo-bad.json")"

say "Verdicts"
echo "echo-good: $good"
echo "echo-bad:  $bad  ($(message_of "$work/echo-bad.json"))"
echo "(full results: .demo/echo-good.ndjson and .demo/echo-bad.json)"

say "Backtest: would the template have caught the incident in echo-incident, 90 to 60 minutes ago?"
echo "canaryd backtest -f success-rate.yaml --arg namespace=echo-incident --start -2h --end -30m --every 10m"
"$canaryd" backtest -f "$template" --arg namespace=echo-incident --prometheus-url "$prom" \
	--start -2h --end -30m --every 10m >"$work/backtest.json" 2>"$work/backtest.txt" || true
cat "$work/backtest.txt"
caught="$(grep -c ' Failed ' "$work/backtest.txt" || true)"

say "The same backtest over HTTP, from the template canaryd serves by name"
echo "curl -X POST '$api/v1/templates/success-rate/backtests?arg.namespace=echo-incident&start=-2h&end=-30m&every=10m'"
curl -sS -X POST "$api/v1/templates/success-rate/backtests?arg.namespace=echo-incident&start=-2h&end=-30m&every=10m" \
	>"$work/backtest-http.json"
caught_http="$(failed_analyses "$work/backtest-http.json")"
echo "analyses that would have failed: $caught_http of $(grep -o '"analysis":{"id"' "$work/backtest-http.json" | wc -l) (full answer: .demo/backtest-http.json)"

say "The page: every analysis above, live, with its charts and why it passed or failed"
page="$(curl -sS -o /dev/null -w '%{http_code}' "$api/ui/")"
echo "open $api/ui/ (GET /ui/: $page)"

if [ "${DEMO_KEEP:-}" = 1 ]; then
	say "Still running: Prometheus $prom, canaryd $api (the page: $api/ui/). Ctrl-C stops both."
	wait
fi

if [ "$good" != Successful ] || [ "$bad" != Failed ] || [ "$caught" -lt 1 ] || [ "$caught_http" -lt 1 ] || [ "$page" != 200 ]; then
	echo "demo: expected echo-good Successful, echo-bad Failed, the incident caught by both backtests and the page served" >&2
	exit 1
fi
say "Demo passed"
