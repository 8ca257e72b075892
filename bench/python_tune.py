"""What a trial of paratune.tune() costs besides the objective: trials per second of a study whose objective
returns at once (so everything measured is paratune's: the sampler's proposal, the store's two writes, the
call into Python), on SQLite, for the random and TPE samplers and with reports.

    PYTHONPATH=build/python python3 bench/python_tune.py [TRIALS] [RUNS]

Prints one line per case: the range over RUNS runs (default 3) of TRIALS trials (default 300) each, in a
fresh study file each run. A figure of this machine, measured, not a model prediction.
"""

import os
import sys
import tempfile
import time

import paratune

SPACE = {"lr": {"type": "float", "low": 1e-5, "high": 1.0, "log": True}, "layers": {"type": "int", "low": 1, "high": 8},
         "optimizer": ["sgd", "adam"]}


def at_once(trial):
    return trial.params["lr"] * trial.params["layers"]


def ten_reports(trial):
    for step in range(10):
        trial.report(trial.params["lr"] / (step + 1), step)
        if trial.should_prune():
            raise paratune.TrialPruned()
    return trial.params["lr"]


def measure(objective, sampler, pruner, trials):
    with tempfile.TemporaryDirectory() as d:
        start = time.perf_counter()
        study = paratune.tune(objective, SPACE, storage=os.path.join(d, "s.db"), sampler=sampler, pruner=pruner,
                              max_trials=trials, seed=1)
        elapsed = time.perf_counter() - start
        assert len(study) == trials
        return trials / elapsed


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    cases = [("random, returns at once", at_once, "random", "none"),
             ("tpe, returns at once", at_once, "tpe", "none"),
             ("random + median pruner, 10 reports", ten_reports, "random", "median")]
    for name, objective, sampler, pruner in cases:
        rates = [measure(objective, sampler, pruner, trials) for _ in range(runs)]
        print(f"{name:38s} {min(rates):7.0f} - {max(rates):7.0f} trials/s  ({runs} runs x {trials} trials, SQLite)")


if __name__ == "__main__":
    main()
