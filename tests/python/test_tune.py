"""tune() with a Python objective: samplers, pruners and stores of `paratune tune`, trials as function calls."""

import json
import math
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import paratune

SPACE = {
    "lr": {"type": "float", "low": 1e-3, "high": 3.0, "log": True},
    "momentum": {"type": "float", "low": 0.0, "high": 0.9},
    "batch_size": [16, 64],
}
STEPS = 30


def make_data(seed=0):
    """A tiny regression problem: y = X w* + noise; 512 examples to train on, 256 to validate."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=8)
    x = rng.normal(size=(768, 8))
    y = x @ w + 0.1 * rng.normal(size=768)
    return x[:512], y[:512], x[512:], y[512:]


X, Y, XV, YV = make_data()


def train(trial):
    """Linear model trained by SGD with momentum; the validation loss after each step is its curve."""
    lr = trial.suggest_float("lr", 1e-3, 3.0, log=True)
    momentum = trial.suggest_float("momentum")
    batch = trial.suggest_categorical("batch_size", [16, 64])
    rng = np.random.default_rng(trial.number)
    w = np.zeros(8)
    velocity = np.zeros(8)
    loss = float("nan")
    for step in range(STEPS):
        idx = rng.integers(0, len(X), size=batch)
        grad = 2 * X[idx].T @ (X[idx] @ w - Y[idx]) / batch
        velocity = momentum * velocity - lr * grad
        w = w + velocity
        loss = float(np.mean((XV @ w - YV) ** 2))
        if not math.isfinite(loss):
            raise FloatingPointError(f"diverged at step {step}")
        trial.report(loss, step)
        trial.report_metric("weight_norm", float(np.linalg.norm(w)), step)
        if trial.should_prune():
            raise paratune.TrialPruned()
    return loss


def test_tuning_a_numpy_model_with_pruning(tmp_path, cli):
    storage = tmp_path / "study.db"
    study = paratune.tune(train, SPACE, storage=storage, max_trials=30, seed=1, steps=STEPS,
                          pruner_options={"startup_trials": 5, "warmup_steps": 5})
    assert len(study) == 30
    statuses = [t.status for t in study]
    assert statuses.count("pruned") >= 3, statuses
    assert statuses.count("completed") >= 5, statuses
    assert set(statuses) <= {"completed", "pruned", "failed"}
    # Divergent learning rates fail (FloatingPointError), with the reason stored, and the study goes on.
    for t in study:
        if t.status == "failed":
            assert t.reason.startswith("FloatingPointError: diverged at step"), t.reason
    # The best is a good fit: the noise floor is 0.01; the untrained model's loss is about 8.
    initial = float(np.mean(YV ** 2))
    assert study.best_value < 0.05 * initial
    assert study.best.status == "completed"
    assert study.best_params == study.best.params
    # Pruned trials stopped early, completed ones ran every step, each report stored with its step.
    for t in study:
        curve = t.values("value")
        if t.status == "completed":
            assert [s for s, _ in curve] == list(range(STEPS))
            assert t.objective == curve[-1][1]
        if t.status == "pruned":
            assert len(curve) < STEPS
            assert "stopped by the median pruner" in t.reason
        assert len(t.values("weight_norm")) == len(curve)
    # The program reads the study as any other.
    code, out, err = cli("study", "show", str(storage), "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["config"]["kind"] == "hpo" and shown["config"]["runner"] == "python objective"
    assert len(shown["trials"]) == 30
    code, out, err = cli("study", "show", str(storage))
    assert code == 0, err
    assert "trials: python objective (in-process)" in out and "up to 30 steps per trial" in out
    reopened = paratune.open_study(storage)
    assert reopened.best_value == study.best_value and reopened.kind == "hpo"
    assert paratune.studies(storage) == ["main"]
    assert reopened.to_dict()["curves"]
    page = reopened.to_html()
    assert page.startswith("<!DOCTYPE html>") and '"objective":"value"' in page.replace(" ", "")


def test_a_study_resumes_reusing_its_trials(tmp_path):
    storage = tmp_path / "study.db"
    first = paratune.tune(train, SPACE, storage=storage, max_trials=4, seed=3, pruner="none")
    again = paratune.tune(train, SPACE, storage=storage, max_trials=7, seed=3, pruner="none")
    assert len(first) == 4 and len(again) == 7
    assert [t.params for t in again.trials[:4]] == [t.params for t in first.trials]
    # Another identity (here: another space) is refused, naming what differs.
    with pytest.raises(paratune.Error, match=r"created with another configuration: space.parameters.batch_size.choices "
                                             r"is \[16,32,64\] now, \[16,64\] when the study was created"):
        paratune.tune(train, {**SPACE, "batch_size": [16, 32, 64]}, storage=storage, max_trials=8, pruner="none")
    with pytest.raises(paratune.Error, match=r"direction is \"maximize\" now, \"minimize\" when the study was created"):
        paratune.tune(train, SPACE, storage=storage, max_trials=8, pruner="none", direction="maximize")


def test_failures_out_of_memory_and_bad_returns_are_stored_and_the_study_goes_on(tmp_path):
    def objective(trial):
        batch = trial.suggest_categorical("batch_size")
        lr = trial.suggest_float("lr")
        if batch == 64 and lr > 0.5:
            raise MemoryError("64 x 8 floats do not fit")
        if batch == 64:
            raise ValueError("refused: batch 64")
        if lr > 1.0:
            return "1.5"  # a string float() would parse is still not a number
        return np.float64(lr)  # numpy scalars are numbers

    study = paratune.tune(objective, SPACE, storage=tmp_path / "s.db", max_trials=16, sampler="random", seed=2,
                          pruner="none")
    assert len(study) == 16
    by_status = {}
    for t in study:
        by_status.setdefault(t.status, []).append(t)
    assert by_status.get("failed") and by_status.get("completed")
    for t in by_status["failed"]:
        assert t.reason in ("ValueError: refused: batch 64",) or t.reason == "the objective returned '1.5', not a number"
    for t in by_status.get("oom", []):
        assert t.reason == "MemoryError: 64 x 8 floats do not fit"


def test_a_diverged_report_fails_its_trial_only(tmp_path):
    def objective(trial):
        lr = trial.suggest_float("lr")
        trial.report(float("nan") if lr > 1.0 else lr, 0)
        return lr

    study = paratune.tune(objective, SPACE, storage=tmp_path / "s.db", max_trials=12, sampler="random", seed=6,
                          pruner="none")
    failed = [t for t in study if t.status == "failed"]
    assert len(study) == 12 and failed and len(failed) < 12
    assert all(t.reason.startswith(f"Error: trial {t.number}: report: value nan at step 0 is not a finite number")
               for t in failed), [t.reason for t in failed]


def test_optunas_trial_pruned_ends_a_trial_as_pruned():
    """Code ported from Optuna raises optuna.TrialPruned: a class of that name, whatever its module."""
    class TrialPruned(Exception):  # what optuna.exceptions defines; Optuna itself need not be installed
        pass

    def objective(trial):
        lr = trial.suggest_float("lr")
        trial.report(lr, 0)
        if trial.number % 2 == 0:
            raise TrialPruned()
        return lr

    study = paratune.tune(objective, SPACE, max_trials=4, sampler="random", pruner="none")
    assert [t.status for t in study] == ["pruned" if t.number % 2 == 0 else "completed" for t in study]
    assert {t.status for t in study} == {"pruned", "completed"}


def test_none_is_a_categorical_choice():
    """As in Optuna: suggest_categorical("norm", [None, "layernorm"]) gives None back, stored as null."""
    def objective(trial):
        norm = trial.suggest_categorical("norm", [None, "layernorm"])
        return 0.0 if norm is None else 1.0

    study = paratune.tune(objective, {"norm": [None, "layernorm"]}, max_trials=2, sampler="grid", pruner="none")
    assert [t.params["norm"] for t in study] == [None, "layernorm"]
    assert [t.objective for t in study] == [0.0, 1.0]


def test_in_memory_storage_lives_as_long_as_its_study():
    """storage=None or ":memory:", as in Optuna: no file to name; the Study returned holds the store."""
    import gc
    import os

    for storage in (None, ":memory:"):
        study = paratune.tune(lambda trial: trial.suggest_float("lr"), SPACE, storage=storage, max_trials=4,
                              sampler="random", pruner="none")
        assert [t.status for t in study] == ["completed"] * 4
        path = study.storage
        assert os.path.exists(path)
        assert "<html" in study.to_html().lower()  # reopens the store
        del study
        gc.collect()
        assert not os.path.exists(path)
    # Without a keyword: the same in-memory default.
    assert len(paratune.tune(lambda trial: trial.suggest_float("lr"), SPACE, max_trials=2, pruner="none")) == 2


def test_a_step_reported_again_is_ignored_with_a_warning(tmp_path):
    """As Optuna does: the repeated step's value is dropped, the trial and the study go on."""
    def objective(trial):
        lr = trial.suggest_float("lr")
        trial.report(lr, 0)
        trial.report(lr + 1, 0)  # the same step again
        trial.report(lr * 2, 1)
        return lr * 2

    with pytest.warns(UserWarning, match=r"^trial \d+: report: step 0 was reported already; the value "):
        study = paratune.tune(objective, SPACE, storage=tmp_path / "s.db", max_trials=3, sampler="random",
                              pruner="none")
    assert [t.status for t in study] == ["completed"] * 3
    for t in study:
        assert [step for step, _ in t.values("value")] == [0, 1]
        assert t.values("value")[0][1] == t.params["lr"]


def test_a_trial_asking_for_what_the_space_does_not_have_stops_the_study(tmp_path):
    def objective(trial):
        return trial.suggest_float("lr", 0.1, 0.2)

    with pytest.raises(paratune.Error, match=r"suggest_float\('lr'\): asked for float from 0.1 to 0.2; the space "
                                             r"declares float from 0.001 to 3, log"):
        paratune.tune(objective, SPACE, storage=tmp_path / "s.db", max_trials=5)
    study = paratune.open_study(tmp_path / "s.db")
    assert [t.status for t in study] == ["failed"]

    def other_int_bounds(trial):
        return float(trial.suggest_int("layers", 1, 8, log=True))

    with pytest.raises(paratune.Error, match=r"suggest_int\('layers'\): asked for int from 1 to 8, log; the space "
                                             r"declares int from 2 to 6"):
        paratune.tune(other_int_bounds, {"layers": {"type": "int", "low": 2, "high": 6}},
                      storage=tmp_path / "i.db", max_trials=5)

    def unknown(trial):
        return trial.suggest_float("learning_rate")

    with pytest.raises(paratune.Error, match=r"unknown parameter 'learning_rate'"):
        paratune.tune(unknown, SPACE, storage=tmp_path / "t.db", max_trials=5)


def test_keyboard_interrupt_stops_the_study_and_its_trial_runs_again_on_resume(tmp_path):
    storage = tmp_path / "s.db"

    def objective(trial):
        if trial.number == 3:
            raise KeyboardInterrupt
        return trial.suggest_float("lr")

    with pytest.raises(KeyboardInterrupt):
        paratune.tune(objective, SPACE, storage=storage, max_trials=6, sampler="random", pruner="none")
    study = paratune.open_study(storage)
    assert [t.status for t in study] == ["completed", "completed", "interrupted"]
    resumed = paratune.tune(lambda trial: trial.suggest_float("lr"), SPACE, storage=storage, max_trials=6,
                            sampler="random", pruner="none")
    assert resumed.trials[3].params == study.trials[2].params  # asked again first
    assert [t.status for t in resumed].count("completed") == 6


def test_objectives_run_in_parallel_threads(tmp_path):
    active = 0
    most = 0
    lock = threading.Lock()

    def objective(trial):
        nonlocal active, most
        with lock:
            active += 1
            most = max(most, active)
        time.sleep(0.2)  # releases the GIL, as a torch step does
        with lock:
            active -= 1
        return trial.suggest_float("lr")

    study = paratune.tune(objective, SPACE, storage=tmp_path / "s.db", max_trials=9, n_jobs=3, sampler="random",
                          pruner="none")
    assert len(study) == 9 and all(t.status == "completed" for t in study)
    assert most == 3
    assert len({json.dumps(t.params, sort_keys=True) for t in study}) == 9


def test_grid_search_ends_when_the_space_is_exhausted(tmp_path):
    space = {"parameters": {"a": [1, 2, 3], "b": ["x", "y"]}, "constraints": ["a != 2"]}
    seen = []

    def objective(trial):
        seen.append((trial.suggest_categorical("a"), trial.suggest_categorical("b")))
        return trial.params["a"]

    study = paratune.tune(objective, space, storage=tmp_path / "s.db", sampler="grid", pruner="none",
                          direction="maximize")
    assert sorted(seen) == [(1, "x"), (1, "y"), (3, "x"), (3, "y")]
    assert study.best_value == 3


def test_conditional_parameters_and_a_kept_trial(tmp_path):
    space = {"optimizer": ["sgd", "adam"],
             "momentum": {"type": "float", "low": 0.5, "high": 0.9, "when": "optimizer == 'sgd'"}}
    kept = []

    def objective(trial):
        kept.append(trial)
        if trial.suggest_categorical("optimizer") == "adam":
            with pytest.raises(paratune.Error, match="not active in this trial"):
                trial.suggest_float("momentum")
            return 1.0
        return trial.suggest_float("momentum")

    paratune.tune(objective, space, storage=tmp_path / "s.db", max_trials=6, sampler="random", pruner="none",
                  seed=4)
    with pytest.raises(paratune.Error, match="the trial has ended"):
        kept[0].report(1.0, 0)


def test_bad_options_are_errors_naming_the_option(tmp_path):
    with pytest.raises(paratune.Error, match="asha: rests trials at rungs"):
        paratune.tune(train, SPACE, storage=tmp_path / "s.db", pruner="asha", steps=30)
    with pytest.raises(paratune.Error, match="unknown hyperparameter sampler 'tpee' \\(did you mean 'tpe'\\?\\)"):
        paratune.tune(train, SPACE, storage=tmp_path / "s.db", sampler="tpee")
    with pytest.raises(paratune.Error, match=r"pruner_options: unknown option 'warmup' \(did you mean 'warmup_steps'\?\); valid: startup_trials, warmup_steps"):
        paratune.tune(train, SPACE, storage=tmp_path / "s.db", pruner_options={"warmup": 3})
    with pytest.raises(paratune.Error, match=r"^study_name '': must not be empty"):
        paratune.tune(train, SPACE, storage=tmp_path / "s.db", study_name="")
    with pytest.raises(paratune.Error, match=r"^pruner_options.percentile 150"):
        paratune.tune(train, SPACE, storage=tmp_path / "s.db", pruner="percentile", pruner_options={"percentile": 150})
    with pytest.raises(paratune.Error, match=r"option sampler_options.startup_trials = 2.7: must be a whole number"):
        paratune.tune(train, SPACE, storage=tmp_path / "s.db", sampler_options={"startup_trials": 2.7})
    with pytest.raises(paratune.Error, match=r"must be a whole number from -2147483648 to 2147483647"):
        paratune.tune(train, SPACE, storage=tmp_path / "s.db", sampler_options={"startup_trials": 10**12})
    with pytest.raises(paratune.Error, match="n_jobs"):
        paratune.tune(train, SPACE, storage=tmp_path / "s.db", n_jobs=0)
    with pytest.raises(paratune.Error, match="lr.low"):
        paratune.tune(train, {"lr": {"type": "float", "low": 0, "high": 1, "log": True}}, storage=tmp_path / "s.db")
    with pytest.raises(paratune.Error, match="no such study file"):
        paratune.open_study(tmp_path / "missing.db")


def test_without_a_space_the_objectives_suggestions_are_the_space(tmp_path):
    """Define-by-run, as in Optuna: the space is read from one call that ends at the first report."""
    calls = []

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-3, 3.0, log=True)
        momentum = trial.suggest_float("momentum", 0.0, 0.9)
        batch = trial.suggest_categorical("batch_size", [16, 64])
        layers = trial.suggest_int("layers", 1, 4)
        calls.append((lr, momentum, batch, layers))
        for step in range(3):
            trial.report(lr * (step + 1), step)
        return lr + layers

    storage = tmp_path / "s.db"
    study = paratune.tune(objective, storage=storage, max_trials=6, sampler="random", seed=8)
    assert len(study) == 6 and all(t.status == "completed" for t in study)
    # The probe call got the middles of the ranges and the first choice, and ended at its first report.
    assert calls[0] == (pytest.approx(math.sqrt(3e-3)), pytest.approx(0.45), 16, 3)
    assert len(calls) == 7
    space = study.identity["space"]["parameters"]
    assert list(space) == ["lr", "momentum", "batch_size", "layers"]
    assert space["lr"]["log"] is True and space["layers"]["type"] == "int"
    # A resumed study takes its stored space: no probe call.
    calls.clear()
    again = paratune.tune(objective, storage=storage, max_trials=8, sampler="random", seed=8)
    assert len(again) == 8 and len(calls) == 2

    def no_bounds(trial):
        return trial.suggest_float("x")

    def branches(trial):
        if trial.suggest_categorical("opt", ["adam", "sgd"]) == "sgd":
            trial.suggest_float("momentum", 0.0, 0.99)
        return 1.0

    with pytest.raises(paratune.Error, match=r"unknown parameter 'momentum'; valid: opt; the space was read from the "
                                             r"objective's first call, which did not suggest it"):
        paratune.tune(branches, storage=tmp_path / "w.db", max_trials=20, sampler="grid")

    with pytest.raises(paratune.Error, match=r"suggest_float\('x'\): tune\(\) was given no space.*low and high"):
        paratune.tune(no_bounds, storage=tmp_path / "t.db", max_trials=2)
    with pytest.raises(paratune.Error, match=r"space: none given, and the objective suggested no parameter"):
        paratune.tune(lambda trial: 1.0, storage=tmp_path / "u.db", max_trials=2)
    with pytest.raises(paratune.Error, match=r"the objective's suggestions: parameters.x: low 2 must be below high 1"):
        paratune.tune(lambda trial: trial.suggest_float("x", 2.0, 1.0), storage=tmp_path / "v.db", max_trials=2)


def test_an_objective_failing_in_the_call_that_reads_its_space_still_gives_the_space(tmp_path, caplog):
    # The middle of x's range (0) fails; the suggestions made before are the space, and that
    # configuration's trials fail like any other.
    def objective(trial):
        x = trial.suggest_float("x", -1.0, 1.0)
        if abs(x) < 0.1:
            raise ValueError("too close to zero")
        return x * x

    with caplog.at_level("WARNING", logger="paratune"):
        study = paratune.tune(objective, storage=tmp_path / "s.db", max_trials=8, sampler="random", seed=3)
    assert "the call that reads the space raised ValueError: too close to zero" in caplog.text
    assert len(study) == 8 and study.best_value is not None

    def fails_at_once(trial):
        raise RuntimeError("no data")

    with pytest.raises(RuntimeError, match="no data"):
        paratune.tune(fails_at_once, storage=tmp_path / "t.db", max_trials=3)


def test_no_limit_is_said(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="paratune"):
        paratune.tune(lambda trial: float(trial.suggest_categorical("n")), {"n": [1, 2, 3]}, storage=tmp_path / "g.db",
                      sampler="grid")
    assert "neither max_trials nor timeout given" in caplog.text


def test_the_space_reading_call_stops_on_its_own_refusals(tmp_path):
    # A second suggestion without bounds is the objective's mistake, not a failing configuration.
    def objective(trial):
        trial.suggest_float("x", -1.0, 1.0)
        trial.suggest_float("y")
        return 0.0

    with pytest.raises(paratune.Error, match=r"suggest_float\('y'\): .* each must give its low and high"):
        paratune.tune(objective, storage=tmp_path / "s.db", max_trials=3)


def test_each_trial_is_logged_with_its_value_parameters_and_the_best_so_far(tmp_path, caplog):
    # Issue 39 item 10: tune() showed nothing per trial. One record per trial on the "paratune" logger, as
    # Optuna logs its trials: INFO, failures as WARNING.
    values = {1: 0.5, 3: 0.7, 5: 0.2}
    reprs = []

    def objective(trial):
        reprs.append(repr(trial))
        trial.suggest_float("lr")
        if trial.number == 2:
            raise ValueError("boom")
        if trial.number == 4:
            trial.report(0.9, 0)
            raise paratune.TrialPruned()
        return values[trial.number]

    with caplog.at_level("INFO", logger="paratune"):
        study = paratune.tune(objective, SPACE, storage=tmp_path / "s.db", max_trials=5, sampler="random",
                              pruner="none", objective_name="loss")
    params = [json.dumps(t.params, separators=(",", ":")) for t in study]
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "paratune"]
    assert records == [
        ("INFO", f"trial 1 completed with loss 0.5 and parameters {params[0]}; best is trial 1 with loss 0.5"),
        ("WARNING", f"trial 2 failed with parameters {params[1]}: ValueError: boom; best is trial 1 with loss 0.5"),
        ("INFO", f"trial 3 completed with loss 0.7 and parameters {params[2]}; best is trial 1 with loss 0.5"),
        ("INFO", f"trial 4 pruned after 1 step (loss 0.9) with parameters {params[3]} (the program stopped it after "
                 "step 0); best is trial 1 with loss 0.5"),
        ("INFO", f"trial 5 completed with loss 0.2 and parameters {params[4]}; best is trial 5 with loss 0.2"),
    ], records
    assert reprs[0] == f"<paratune.Trial 1 {params[0]}>"
    # A resumed study's best so far counts the earlier run's trials.
    caplog.clear()
    with caplog.at_level("INFO", logger="paratune"):
        paratune.tune(lambda trial: 1.0, SPACE, storage=tmp_path / "s.db", max_trials=6, sampler="random",
                      pruner="none", objective_name="loss")
    assert [r.getMessage().split("; ")[-1] for r in caplog.records] == ["best is trial 5 with loss 0.2"]
    # The study and its trials say what they hold; best_trial is Optuna's name.
    assert repr(study).startswith("<paratune.Study 'main' in ")
    assert repr(study).endswith(": 5 trials, best: trial 5, loss 0.2>")
    assert study.best_trial.number == study.best.number == 5 and study.best_trial.objective == 0.2
    assert [t.objective for t in study] == [0.5, None, 0.7, 0.9, 0.2]
    assert all(t.duration_s >= 0 for t in study)
    assert repr(study.trials[0]) == f"<paratune.StoredTrial 1 completed objective 0.5 {params[0]}>"


def test_trials_are_shown_on_stderr_unless_the_program_configures_logging(tmp_path):
    # Without any logging setup (a script, a notebook) the lines reach stderr; with the program's own setup
    # they go through its handlers only, once; a level set on the logger quiets them.
    runs = []

    def run(setup):
        runs.append(setup)
        storage = tmp_path / f"{len(runs)}.db"  # a new study each time
        code = (f"import logging, paratune\n{setup}\n"
                f"paratune.tune(lambda t: t.suggest_float('x', 0.0, 1.0), storage={str(storage)!r},"
                " max_trials=3, pruner='none')\n")
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stderr.splitlines() if " completed with value " in line]

    shown = run("")
    assert len(shown) == 3 and shown[0].startswith("[INFO ") and "paratune: trial 1 completed with value " in shown[0]
    configured = run("logging.basicConfig(format='%(name)s|%(message)s')")
    assert [line.split("|")[0] for line in configured] == ["paratune"] * 3
    assert run("logging.getLogger('paratune').setLevel(logging.WARNING)") == []


def test_any_hashable_choice_comes_back_as_the_object_listed(tmp_path):
    """As in Optuna: None, numbers, strings as themselves; a tuple (any other hashable) stored as its repr(),
    the objective given the very object it listed -- also in the call that reads the space."""
    pair, triple = (16, 32), (1, 2, 3)
    choices = [None, pair, triple, "adam"]
    got = []

    def objective(trial):
        value = trial.suggest_categorical("choice", choices)
        assert any(value is c for c in choices), value
        got.append(value)
        return float(len(value)) if isinstance(value, tuple) else 0.0

    study = paratune.tune(objective, storage=tmp_path / "s.db", max_trials=4, sampler="grid", pruner="none")
    assert [t.params["choice"] for t in study] == [None, "(16, 32)", "(1, 2, 3)", "adam"]
    assert got[1:] == choices  # got[0]: the call that read the space, given the first choice
    with pytest.raises(paratune.Error, match=r"suggest_categorical\('choice'\): choices 'ab': must be a list of values"):
        paratune.tune(lambda t: t.suggest_categorical("choice", "ab"), {"choice": [None, "(16, 32)"]},
                      storage=tmp_path / "t.db", max_trials=2, pruner="none")


def test_a_subclass_of_an_exception_named_trial_pruned_ends_a_trial_as_pruned():
    """Matched by class name anywhere in the MRO: a ported project's own subclass of optuna.TrialPruned."""
    class TrialPruned(Exception):
        pass

    class StoppedEarly(TrialPruned):
        pass

    def objective(trial):
        lr = trial.suggest_float("lr")
        trial.report(lr, 0)
        raise StoppedEarly("too slow")

    study = paratune.tune(objective, SPACE, max_trials=2, sampler="random", pruner="none")
    assert [t.status for t in study] == ["pruned", "pruned"]
    assert study.trials[0].reason == "the objective raised StoppedEarly: too slow"


def test_cmaes_searches_a_continuous_space_where_random_search_does_not(tmp_path):
    # A 6-d sphere off the centre: CMA-ES (lambda = 9) narrows onto it within 120 trials; random draws
    # stay around 4 (seed 1 gives 0.45 against 4.4).
    def sphere(trial):
        return sum((trial.suggest_float(f"x{i}", -5, 5) - 1) ** 2 for i in range(6))

    best = {}
    for sampler in ("cmaes", "random"):
        study = paratune.tune(sphere, storage=str(tmp_path / f"{sampler}.db"), sampler=sampler, max_trials=120, seed=1)
        best[sampler] = min(t.objective for t in study.trials if t.objective is not None)
    assert best["cmaes"] < 1.5
    assert best["random"] > 3 * best["cmaes"]
