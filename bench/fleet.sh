#!/usr/bin/env bash
# Fleet scale benchmark: AGENTS simulated agents (default 1,000;
# goroutines of bench/fleetload, each with its own token and TLS client,
# on loopback) enrol, register, heartbeat and upload RUNS results each
# into one `fullpipe controller` process, first on SQLite, then on
# PostgreSQL (Debian's, started here in a temporary directory). Prints,
# per store: the time to enrol and to register all agents, results
# ingested per second, p50/p99 API latency (all calls, and uploads), and
# the controller's peak RSS. Targets (issue 11): all registered in under
# 10 s, p99 under 50 ms, at least 1,000 results/s on PostgreSQL.
#
# Usage: bench/fleet.sh [AGENTS [RUNS]]   (as root or a user who may run postgres)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
AGENTS=${1:-1000} RUNS=${2:-10}
[[ $AGENTS =~ ^[0-9]+$ && $AGENTS -ge 2 && $AGENTS -le 100000 ]] || { echo "usage: bench/fleet.sh [AGENTS 2-100000 [RUNS 1-1000]]" >&2; exit 2; }
[[ $RUNS =~ ^[0-9]+$ && $RUNS -ge 1 && $RUNS -le 1000 ]] || { echo "usage: bench/fleet.sh [AGENTS 2-100000 [RUNS 1-1000]]" >&2; exit 2; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[ -x "$PGBIN/initdb" ] || { echo "bench: PostgreSQL not found (apt-get install -y postgresql)" >&2; exit 2; }
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

TMP=$(mktemp -d)
chmod 755 "$TMP" # postgres runs as its own user and must reach its directory
BIN=$TMP/fullpipe LOAD=$TMP/fleetload
CGO_ENABLED=0 go build -o "$BIN" ./cmd/fullpipe
CGO_ENABLED=0 go build -o "$LOAD" ./bench/fleetload
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ -n "${PGDATA:-}" ] && run_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT

PGUSER_OS=postgres
id "$PGUSER_OS" >/dev/null 2>&1 || PGUSER_OS=nobody
run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u "$PGUSER_OS" -- "$@"; else "$@"; fi; }

start_pg() {
	PGDATA=$TMP/pg; mkdir -p "$PGDATA"; chmod 700 "$PGDATA"
	[ "$(id -u)" = 0 ] && chown -R "$PGUSER_OS" "$TMP/pg"
	run_pg "$PGBIN/initdb" -D "$PGDATA" -A trust -U fullpipe >/dev/null
	PGPORT=$(free_port)
	run_pg "$PGBIN/pg_ctl" -D "$PGDATA" -w -l "$PGDATA/log" -o "-p $PGPORT -k $PGDATA -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on" start >/dev/null
	run_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U fullpipe fleet
	DSN="postgres://fullpipe@127.0.0.1:$PGPORT/fleet?sslmode=disable"
}

# bench NAME DSN: one controller on DSN, the load, one line of figures.
bench() {
	local name=$1 dsn=$2 state=$TMP/state-$1 port
	port=$(free_port)
	mkdir -p "$state"
	"$BIN" controller --listen "127.0.0.1:$port" --state-dir "$state" --db "$dsn" --heartbeat 5s -q 2>"$TMP/ctl-$name.log" &
	local pid=$!; PIDS+=("$pid")
	wait_controller "$state"
	"$LOAD" -url "https://127.0.0.1:$port" -state-dir "$state" -db "$dsn" -agents "$AGENTS" -runs "$RUNS" >"$TMP/$name.json"
	local hwm; hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
	kill "$pid"; wait "$pid" 2>/dev/null || true
	python3 - "$name" "$TMP/$name.json" "$hwm" <<'PY'
import json, sys
name, path, hwm = sys.argv[1], sys.argv[2], int(sys.argv[3])
o = json.load(open(path))
l = o["latency_ms"]
print(f"{name:10} agents {o['agents']}: enrolled in {o['enrol_s']:.2f} s, registered in {o['register_s']:.2f} s; "
      f"{o['results']} results in {o['ingest_s']:.2f} s = {o['results_per_s']:.0f} results/s; "
      f"steady heartbeats p50 {l['steady heartbeat']['p50']:.1f} ms p99 {l['steady heartbeat']['p99']:.1f} ms; "
      f"at saturation (ingest) p50 {l['ingest']['p50']:.1f} ms p99 {l['ingest']['p99']:.1f} ms; "
      f"register p99 {l['register']['p99']:.1f} ms; {o['calls']} calls, {o['errors']} errors; controller peak RSS {hwm/1024:.0f} MiB")
PY
}

echo "== $AGENTS agents, $RUNS results each, one controller process, loopback, TLS"
bench sqlite "$TMP/fleet.db"
start_pg
bench postgres "$DSN"
