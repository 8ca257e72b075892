#!/usr/bin/env bash
# Throughput of `paratune tune --worker` on trivial trials (issue 22, docs/backends-and-stores.md, "Many workers, one
# study"): T trials of a program that reports two steps of 1 us (the first is warm-up) and exits, run by 1, 4 and 16 worker
# processes on one PostgreSQL study (a private server started here: initdb + pg_ctl, durable
# defaults -- fsync and synchronous_commit on -- unless FSYNC=off), against one controller on an
# SQLite file. Each worker runs one trial at a time (--parallel 1); the SQLite controller runs 1,
# then 4 at a time. Then the same for a hyperparameter study (random sampler, median pruner, a
# trial of paratune-function-trial reporting its objective at each of 2 steps): its claims also
# read every trial's metrics (the pruner's curves). Prints trials/s = T / wall time of all workers
# (start to last exit), best of RUNS runs.
#
#   bench/store_workers.sh [BUILD_DIR (build)] [T (400)] [RUNS (3)]
#
# Needs the Debian postgresql package (/usr/lib/postgresql/*/bin); as root the server runs as the
# `postgres` user. The anchor: Optuna's RDB storage takes minutes for 1,000 trivial trials on MySQL
# (optuna issue #3048).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
trials=${2:-400}
runs=${3:-3}
paratune=$build/paratune
fake=$build/tests/paratune_fake_trial
function_trial=$build/bench/functions/paratune-function-trial
[ -x "$paratune" ] && [ -x "$fake" ] && [ -x "$function_trial" ] ||
  { echo "build paratune, paratune_fake_trial and paratune-function-trial in $build first" >&2; exit 2; }
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)

work=$(mktemp -d /tmp/paratune-workers-bench.XXXXXX)
chmod 755 "$work"
as_pg=()
[ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)
mkdir "$work/pg" && [ "$(id -u)" = 0 ] && chown postgres "$work/pg"
cleanup() { "${as_pg[@]}" "$bin/pg_ctl" -D "$work/pg/data" -m immediate -w stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
"${as_pg[@]}" "$bin/initdb" -D "$work/pg/data" -A trust -U postgres >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
{
  echo "listen_addresses = '127.0.0.1'"; echo "port = $port"; echo "unix_socket_directories = '$work/pg'"
  echo "max_connections = 100"
  if [ "${FSYNC:-on}" = off ]; then echo "fsync = off"; echo "synchronous_commit = off"; fi
} >> "$work/pg/data/postgresql.conf"
"${as_pg[@]}" "$bin/pg_ctl" -D "$work/pg/data" -l "$work/pg/server.log" -w start >/dev/null

# A space of 20 x 20 = 400 points (T <= 400 trials, each point once).
printf 'parameters:\n  a: [%s]\n  b: [%s]\n' "$(seq -s ', ' 0 19)" "$(seq -s ', ' 0 19)" > "$work/space.yaml"
tune_args=(tune --space "$work/space.yaml" --command "$fake --steps 2 --step-time 1e-6" --steps 2 --max-trials "$trials")

db=0
now() { date +%s.%N; }
# run_workers N [controller]: sets `secs` to the time N workers (or one controller without
# --worker) take to run the study to its end on a fresh database.
run_workers() {
  db=$((db + 1))
  "${as_pg[@]}" "$bin/psql" -q -h "$work/pg" -p "$port" -U postgres -c "CREATE DATABASE bench$db" postgres
  local locator="postgresql://postgres@127.0.0.1:$port/bench$db" start end pids=() mode=(--worker)
  [ "${2:-}" = controller ] && mode=()
  start=$(now)
  for i in $(seq 1 "$1"); do
    "$paratune" "${tune_args[@]}" --study "$locator" --trials-dir "$work/t$db" "${mode[@]}" --parallel 1 \
        >/dev/null 2>"$work/w$i.err" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$work"/w*.err >&2; exit 1; }; done
  end=$(now)
  local stored
  stored=$("${as_pg[@]}" "$bin/psql" -tA -h "$work/pg" -p "$port" -U postgres -c \
      "SELECT COUNT(DISTINCT params_json) || '/' || COUNT(*) FROM trials WHERE status IN ('completed', 'pruned')" "bench$db")
  [ "$stored" = "$trials/$trials" ] || { echo "bench$db: $stored distinct/completed trials, not $trials" >&2; exit 1; }
  secs=$(echo "$end - $start" | bc -l)
}
# run_sqlite SLOTS: sets `secs` to the time one controller takes on a fresh SQLite file.
run_sqlite() {
  db=$((db + 1))
  local start end
  start=$(now)
  "$paratune" "${tune_args[@]}" --study "$work/s$db.db" --parallel "$1" >/dev/null 2>"$work/s.err" || { cat "$work/s.err" >&2; exit 1; }
  end=$(now)
  secs=$(echo "$end - $start" | bc -l)
}
best_rate() {  # best_rate COMMAND ARGS...: prints "N trials/s (runs: ...)", N the best of RUNS
  local rates=() r
  for _ in $(seq 1 "$runs"); do
    "$@"
    r=$(echo "$trials / $secs" | bc -l)
    rates+=("$(printf '%.0f' "$r")")
  done
  printf '%s trials/s (runs: %s)' "$(printf '%s\n' "${rates[@]}" | sort -n | tail -1)" "${rates[*]}"
}

echo "$trials trivial trials, $(nproc) cores, PostgreSQL $("$bin/postgres" --version | awk '{print $3}') (fsync ${FSYNC:-on}), best of $runs"
echo -n "SQLite, 1 controller, --parallel 1: "; best_rate run_sqlite 1; echo
echo -n "SQLite, 1 controller, --parallel 4: "; best_rate run_sqlite 4; echo
echo -n "PostgreSQL, 1 controller (no --worker), --parallel 1: "; best_rate run_workers 1 controller; echo
for n in 1 4 16; do echo -n "PostgreSQL, $n worker(s), --parallel 1 each: "; best_rate run_workers "$n"; echo; done

# The hyperparameter study: every configuration a distinct random point.
printf 'parameters:\n  x1: {type: float, low: -5, high: 10}\n  x2: {type: float, low: 0, high: 15}\n' > "$work/hpo.yaml"
tune_args=(tune --space "$work/hpo.yaml" --command "$function_trial branin" --steps 2 --max-trials "$trials"
           --objective value --direction minimize --algo random --pruner median)
echo -n "hyperparameters, SQLite, 1 controller, --parallel 1: "; best_rate run_sqlite 1; echo
for n in 1 4 16; do echo -n "hyperparameters, PostgreSQL, $n worker(s), --parallel 1 each: "; best_rate run_workers "$n"; echo; done
