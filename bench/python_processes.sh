#!/usr/bin/env bash
# Several processes on one Python study (docs/backends-and-stores.md, "Ask-and-tell studies in several
# processes"): T trials of an objective that returns at once (a float and an int suggested), split
# over 1, 2 and 3 processes that each load_study() one SQLite study and optimize() their share, for
# the random and TPE samplers; then the same with Optuna's RDB storage on an SQLite file, where
# python3-optuna is installed. Prints trials/s = T / wall time from the first process's start to the
# last one's exit (Python's start-up included), one line per run.
#
#   bench/python_processes.sh [BUILD_DIR (build)] [T (600)] [RUNS (2)]
#
# A figure of the machine it runs on, measured: nothing here is a model prediction.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
trials=${2:-600}
runs=${3:-2}
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/python"

cat > "$work/paratune_worker.py" <<'PY'
import logging, sys
import paratune
logging.getLogger("paratune").setLevel(logging.WARNING)
study = paratune.load_study("s", sys.argv[1], sampler=sys.argv[3])
study.optimize(lambda t: t.suggest_float("x", 0, 1) + t.suggest_int("n", 1, 8), n_trials=int(sys.argv[2]))
PY
cat > "$work/optuna_worker.py" <<'PY'
import sys
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
sampler = optuna.samplers.TPESampler() if sys.argv[3] == "tpe" else optuna.samplers.RandomSampler()
study = optuna.load_study(study_name="s", storage="sqlite:///" + sys.argv[1], sampler=sampler)
study.optimize(lambda t: t.suggest_float("x", 0, 1) + t.suggest_int("n", 1, 8), n_trials=int(sys.argv[2]))
PY

# run LIBRARY SAMPLER PROCESSES TRIALS: one line of trials/s.
run() {
  local library=$1 sampler=$2 processes=$3 total=$4 db="$work/$1.db"
  rm -f "$db"*
  if [[ $library == paratune ]]; then
    "$python" -c "import paratune; paratune.create_study(storage='$db', study_name='s')" 2>/dev/null
  else
    "$python" -c "import optuna; optuna.logging.set_verbosity(optuna.logging.WARNING); optuna.create_study(storage='sqlite:///$db', study_name='s')"
  fi
  local each=$((total / processes)) start end
  start=$(date +%s.%N)
  for _ in $(seq "$processes"); do "$python" "$work/${library}_worker.py" "$db" "$each" "$sampler" & done
  wait
  end=$(date +%s.%N)
  "$python" -c "print(f'$library $sampler, $processes process(es), $((each * processes)) trials: {$((each * processes)) / ($end - $start):.0f} trials/s')"
}

for sampler in random tpe; do
  for processes in 1 2 3; do
    for _ in $(seq "$runs"); do run paratune "$sampler" "$processes" "$trials"; done
  done
done
if "$python" -c "import optuna" 2>/dev/null; then
  for sampler in random tpe; do
    for processes in 1 3; do run optuna "$sampler" "$processes" $((trials / 2)); done
  done
else
  echo "python3-optuna is not installed: no Optuna lines"
fi
