"""create_study / load_study: Optuna's Study API on paratune's engine, the space defined by the run."""

import gc
import math
import os
import re
import subprocess
import sys
import threading
import types

import pytest

import paratune
from paratune.trial import TrialState


def quadratic(trial):
    x = trial.suggest_float("x", -5.0, 5.0)
    n = trial.suggest_int("n", 1, 9, step=2)
    return (x - 2.0) ** 2 + n


def test_create_optimize_best_and_reload(tmp_path):
    storage = tmp_path / "study.db"
    study = paratune.create_study(storage=storage, study_name="q", seed=1)
    study.optimize(quadratic, n_trials=25)
    trials = study.trials
    assert [t.number for t in trials] == list(range(25))  # from 0, as Optuna's
    assert [t.trial_id for t in trials] == list(range(1, 26))  # as paratune's reports show them
    assert study.trials[study.best_trial.number].value == study.best_value  # Optuna's idiom
    assert all(t.state == TrialState.COMPLETE for t in trials)
    assert all(t.params["n"] in (1, 3, 5, 7, 9) for t in trials)
    assert study.best_value == min(t.value for t in trials)
    assert study.best_params == study.best_trial.params
    assert study.best_trial.distributions["x"] == paratune.distributions.FloatDistribution(-5.0, 5.0)
    assert study.best_trial.distributions["n"].step == 2
    first = trials[0]
    assert first.datetime_start <= first.datetime_complete and first.duration.total_seconds() >= 0
    # The same study, as every other paratune reader sees it.
    stored = paratune.open_study(storage, "q")
    assert stored.best_value == study.best_value and stored.kind == "hpo"
    assert "<html" in stored.to_html().lower()
    # A study of that name is there: an error unless load_if_exists, as in Optuna.
    with pytest.raises(paratune.Error, match=r"study_name 'q': .* has a study of that name already; pass "
                                             r"load_if_exists=True"):
        paratune.create_study(storage=storage, study_name="q")
    again = paratune.create_study(storage=storage, study_name="q", load_if_exists=True, seed=1)
    again.optimize(quadratic, n_trials=5)
    loaded = paratune.load_study(study_name="q", storage=str(storage))
    assert len(loaded.trials) == 30 and loaded.direction == "minimize"
    with pytest.raises(paratune.Error, match=r"study_name 'other': .* has no such study \(it has: q\)"):
        paratune.load_study(study_name="other", storage=storage)


def test_maximize_and_optunas_sqlite_url(tmp_path):
    study = paratune.create_study(storage=f"sqlite:///{tmp_path / 's.db'}", direction="maximize", seed=3)
    study.optimize(lambda t: -quadratic(t), n_trials=12)
    assert study.best_value == max(t.value for t in study.trials)
    assert paratune.load_study(None, tmp_path / "s.db").direction == "maximize"


def test_in_memory_storage_is_a_temporary_file_removed_with_the_study():
    for storage in (None, ":memory:"):
        study = paratune.create_study(storage=storage, seed=2)
        study.optimize(quadratic, n_trials=3)
        path = study.storage
        assert os.path.exists(path) and len(study.trials) == 3
        del study
        gc.collect()
        assert not os.path.exists(path)


@pytest.mark.parametrize("sampler", ["tpe", "gp", "random"])
def test_define_by_run_branches_and_bounds_that_depend_on_earlier_values(tmp_path, sampler):
    """Optuna's core idiom: parameters in branches, a bound set by an earlier value. The space grows."""
    def objective(trial):
        kind = trial.suggest_categorical("classifier", ["svm", "forest"])
        if kind == "svm":
            c = trial.suggest_float("svm_c", 1e-3, 1e3, log=True)
            penalty = abs(math.log10(c))
        else:
            depth = trial.suggest_int("forest_depth", 2, 32, log=True)
            penalty = abs(depth - 8) / 8
        x = trial.suggest_float("x", -4.0, 4.0)
        y = trial.suggest_float("y", 0.0, abs(x) + 1.0)  # a new distribution in nearly every trial
        return penalty + (x - 1.0) ** 2 + y

    study = paratune.create_study(storage=tmp_path / "s.db", sampler=sampler, seed=4)
    study.optimize(objective, n_trials=30)
    trials = study.trials
    assert all(t.state == TrialState.COMPLETE for t in trials), [(t.status, t.reason) for t in trials]
    kinds = {t.params["classifier"] for t in trials}
    assert kinds == {"svm", "forest"}
    for t in trials:
        branch = "svm_c" if t.params["classifier"] == "svm" else "forest_depth"
        other = "forest_depth" if branch == "svm_c" else "svm_c"
        assert branch in t.params and other not in t.params
        assert list(t.params) == ["classifier", branch, "x", "y"]  # in the order asked
        assert 0.0 <= t.params["y"] <= abs(t.params["x"]) + 1.0
        assert t.distributions["y"].high == pytest.approx(abs(t.params["x"]) + 1.0)
        if branch == "forest_depth":
            assert isinstance(t.params["forest_depth"], int) and 2 <= t.params["forest_depth"] <= 32
    # Resumed by another object: the stored distributions are the space it goes on with.
    again = paratune.load_study(None, tmp_path / "s.db", sampler=sampler, seed=4)  # the file's only study
    again.optimize(objective, n_trials=5)
    assert len(again.trials) == 35


def test_tpe_learns_on_a_space_it_discovers(tmp_path):
    """The parameters every trial had are searched by the model: TPE beats its own random start."""
    study = paratune.create_study(storage=tmp_path / "s.db", seed=5)
    study.optimize(lambda t: (t.suggest_float("x", -10.0, 10.0) - 3.0) ** 2, n_trials=40)
    values = [t.value for t in study.trials]
    assert min(values[20:]) < min(values[:10])
    assert study.best_value < 0.5


def test_sampler_options_startup_trials(tmp_path):
    study = paratune.create_study(storage=tmp_path / "s.db", seed=16, sampler_options={"startup_trials": 3})
    study.optimize(lambda t: (t.suggest_float("x", -10.0, 10.0) - 3.0) ** 2, n_trials=6)
    assert len(study.trials) == 6
    with pytest.raises(paratune.Error, match=r"sampler_options: unknown option 'n_startup_trials'; valid: "
                                             r"startup_trials"):
        paratune.create_study(sampler_options={"n_startup_trials": 3})
    with pytest.raises(paratune.Error, match=r"sampler_options.startup_trials 2.5: must be a whole number"):
        paratune.create_study(sampler_options={"startup_trials": 2.5})


def test_steps_and_log(tmp_path):
    def objective(trial):
        a = trial.suggest_float("a", 0.0, 1.0, step=0.25)
        b = trial.suggest_float("b", 0.1, 1.05, step=0.2)  # high moves down onto the grid: 0.9
        c = trial.suggest_int("c", 0, 100, step=10)
        d = trial.suggest_int("d", 1, 1024, log=True)
        e = trial.suggest_float("e", 1e-5, 1e-1, log=True)
        f = trial.suggest_int("f", 3, 3)  # a single value
        return a + b + c + d + e + f

    study = paratune.create_study(storage=tmp_path / "s.db", sampler="random", seed=6)
    study.optimize(objective, n_trials=30)
    for t in study.trials:
        p = t.params
        assert p["a"] in (0.0, 0.25, 0.5, 0.75, 1.0)
        assert any(abs(p["b"] - v) < 1e-9 for v in (0.1, 0.3, 0.5, 0.7, 0.9)), p["b"]
        assert p["c"] % 10 == 0 and 0 <= p["c"] <= 100 and isinstance(p["c"], int)
        assert 1 <= p["d"] <= 1024 and 1e-5 <= p["e"] <= 1e-1 and p["f"] == 3
    assert study.trials[0].distributions["b"].high == pytest.approx(0.9)
    # log on an int: most draws small (the median of 1..1024 log-uniform is about 32).
    ds = sorted(t.params["d"] for t in study.trials)
    assert ds[len(ds) // 2] < 200


def test_any_hashable_is_a_categorical_choice_given_back_as_itself(tmp_path):
    pair = (16, 32)
    choices = [None, True, 1, 2.5, "adam", pair]
    got = []

    def objective(trial):
        value = trial.suggest_categorical("choice", choices)
        got.append(value)
        assert trial.params["choice"] is value
        return float(choices.index(value)) if value is not None else -1.0

    study = paratune.create_study(storage=tmp_path / "s.db", sampler="random", seed=7)
    study.optimize(objective, n_trials=40)
    assert all(any(v is c for c in choices) for v in got)
    assert {repr(v) for v in got} == {repr(c) for c in choices}
    # The study's trials show the objects listed; another study object (another process) the stored form.
    assert {repr(t.params["choice"]) for t in study.trials} == {repr(c) for c in choices}
    stored = {repr(t.params["choice"]) for t in paratune.load_study(None, tmp_path / "s.db").trials}
    assert stored == {"None", "True", "1", "2.5", "'adam'", "'(16, 32)'"}  # a tuple is stored as its repr()
    with pytest.raises(paratune.Error, match=r"suggest_categorical\('z'\): choices .* 1 is listed twice"):
        paratune.create_study().optimize(lambda t: t.suggest_categorical("z", [1, 1]), n_trials=1)


def test_optunas_trial_pruned_catch_and_failures(tmp_path):
    optuna = types.ModuleType("optuna")  # what ported code raises; Optuna itself is not installed
    optuna.TrialPruned = type("TrialPruned", (Exception,), {})
    stopped_early = type("StoppedEarly", (optuna.TrialPruned,), {})  # a name in the MRO counts

    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        trial.report(x, 0)
        if trial.number % 3 == 0:
            raise optuna.TrialPruned() if trial.number % 2 else stopped_early()
        if trial.number % 3 == 1:
            raise ValueError(f"bad {trial.number}")
        return x

    study = paratune.create_study(storage=tmp_path / "s.db", sampler="random", seed=8)
    study.optimize(objective, n_trials=9, catch=(ValueError,))
    states = [t.state for t in study.trials]
    assert states == [TrialState.FAIL if t.number % 3 == 1 else
                      TrialState.PRUNED if t.number % 3 == 0 else TrialState.COMPLETE for t in study.trials]
    assert study.trials[1].reason == "ValueError: bad 1" and study.trials[1].status == "failed"
    # A pruned trial's value is its last report, as Optuna's.
    assert study.trials[0].value == study.trials[0].params["x"] == study.trials[0].intermediate_values[0]
    # Not caught: stored as failed, and optimize() raises it (Optuna's rule).
    with pytest.raises(ValueError, match="bad 10"):
        study.optimize(objective, n_trials=5)
    assert [t.status for t in study.trials][9:] == ["pruned", "failed"]
    # A non-number and NaN fail their trial; the study goes on.
    other = paratune.create_study(seed=1)
    other.optimize(lambda t: "0.5" if t.suggest_int("k", 0, 1) else float("nan"), n_trials=4)
    assert all(t.state == TrialState.FAIL for t in other.trials)
    assert {t.reason for t in other.trials} <= {"the objective returned '0.5', not a number",
                                               "its value nan is not a finite number"}


def test_ask_and_tell(tmp_path):
    study = paratune.create_study(storage=tmp_path / "s.db", seed=9)
    for _ in range(4):
        trial = study.ask()
        x = trial.suggest_float("x", -1.0, 1.0)
        assert trial.suggest_float("x", -1.0, 1.0) == x  # asked again: the same value
        frozen = study.tell(trial, x * x)
        assert frozen.state == TrialState.COMPLETE and frozen.value == x * x
    pruned = study.ask()
    pruned.suggest_float("x", -1.0, 1.0)
    pruned.report(0.7, 0)
    assert study.tell(pruned, state=TrialState.PRUNED).state == TrialState.PRUNED
    failed = study.ask()
    assert study.tell(failed.number, state="fail").state == TrialState.FAIL  # by number, state by name
    with pytest.raises(paratune.Error, match=r"trial 4: suggest_float\('x'\): the trial has ended"):
        pruned.suggest_float("x", -1.0, 1.0)
    with pytest.raises(paratune.Error, match=r"trial 5 is not running"):  # Optuna's numbers, from 0
        study.tell(5, 1.0)
    assert study.tell(5, 1.0, skip_if_finished=True).state == TrialState.FAIL
    # Several values for one objective: the trial fails, with a warning (as in Optuna).
    with pytest.warns(UserWarning, match=r"told 2 values \(1.0, 2.0\); this study has one objective"):
        assert study.tell(study.ask(), (1.0, 2.0)).state == TrialState.FAIL
    with pytest.raises(paratune.Error, match=r"tell: values '0.5': must be a number"):
        study.tell(study.ask(), "0.5")
    with pytest.raises(paratune.Error, match=r"tell: state COMPLETE needs a value"):
        study.tell(study.ask(), state=TrialState.COMPLETE)
    # Two trials asked at once, told in any order.
    a, b = study.ask(), study.ask()
    study.tell(b, b.suggest_float("x", -1.0, 1.0))
    study.tell(a, a.suggest_float("x", -1.0, 1.0))
    assert [t.state for t in study.trials][-2:] == [TrialState.COMPLETE] * 2


def test_pruning_reports_and_a_repeated_step(tmp_path):
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        for step in range(10):
            trial.report(x + 1.0 / (step + 1), step)
            if trial.should_prune():
                raise paratune.TrialPruned()
        return x

    study = paratune.create_study(storage=tmp_path / "s.db", pruner="median",
                                  pruner_options={"startup_trials": 3}, seed=10)
    study.optimize(objective, n_trials=20)
    states = [t.state for t in study.trials]
    assert TrialState.PRUNED in states and TrialState.COMPLETE in states
    for t in study.trials:
        if t.state == TrialState.PRUNED:
            assert len(t.intermediate_values) < 10 and "median pruner" in t.reason

    def repeats(trial):
        trial.report(1.0, 0)
        trial.report(2.0, 0)
        return trial.suggest_float("x", 0.0, 1.0)

    with pytest.warns(UserWarning, match=r"^trial 0: report: step 0 was reported already; the value 2.0 is "
                                         r"ignored"):
        repeated = paratune.create_study(seed=1)
        repeated.optimize(repeats, n_trials=1)
    assert repeated.trials[0].intermediate_values == {0: 1.0}


@pytest.mark.parametrize("pruner", ["asha", "hyperband"])
def test_asha_and_hyperband_judge_a_trial_once_at_each_rung_it_reaches(tmp_path, pruner):
    """In process a trial cannot rest and resume: as Optuna's SuccessiveHalvingPruner, it goes on at a rung
    while it is among the best 1/eta of the trials that reached it, else it stops there."""
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        for step in range(27):
            trial.report(x + 1.0 / (step + 1), step)  # a smaller x is better at every step
            if trial.should_prune():
                raise paratune.TrialPruned()
        return x

    study = paratune.create_study(storage=tmp_path / "s.db", pruner=pruner, steps=27, sampler="random", seed=14)
    study.optimize(objective, n_trials=40)
    trials = study.trials
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    completed = [t for t in trials if t.state == TrialState.COMPLETE]
    assert trials[0].state == TrialState.COMPLETE  # the first trial at every rung goes on
    assert len(pruned) >= 10 and len(completed) >= 3, [t.status for t in trials]
    # Rungs at 1, 3, 9 steps of 27 (eta 3): a trial stops right where it completed one.
    assert {len(t.intermediate_values) for t in pruned} <= {1, 3, 9}
    # Each stopped trial was outside the best third of those that had reached its rung before it.
    for t in pruned:
        rung = len(t.intermediate_values)
        if pruner == "asha":  # (hyperband ranks within brackets, which a trial does not show)
            reached = [o for o in trials if o.number < t.number and len(o.intermediate_values) >= rung]
            better = [o for o in reached if o.params["x"] < t.params["x"]]
            assert len(better) >= max(1, (len(reached) + 1) // 3), (t.number, rung)
    assert sum(t.params["x"] for t in completed) / len(completed) < sum(t.params["x"] for t in pruned) / len(pruned)
    assert paratune.open_study(tmp_path / "s.db").identity["pruner"]["pruner"] == pruner


def test_user_attrs_callbacks_stop_and_threads(tmp_path):
    seen = []

    def objective(trial):
        trial.set_user_attr("note", {"number": trial.number})
        return trial.suggest_float("x", 0.0, 1.0)

    def callback(study, frozen):
        seen.append(frozen.number)
        if len(seen) == 4:
            study.stop()

    study = paratune.create_study(storage=tmp_path / "s.db", seed=11)
    study.set_user_attr("owner", "me")
    study.optimize(objective, n_trials=10, callbacks=[callback])
    assert seen == [0, 1, 2, 3] and len(study.trials) == 4
    assert study.trials[1].user_attrs == {"note": {"number": 1}}
    assert study.user_attrs == {"owner": "me"}

    active = most = 0
    lock = threading.Lock()

    def slow(trial):
        nonlocal active, most
        with lock:
            active += 1
            most = max(most, active)
        x = trial.suggest_float("x", 0.0, 1.0)
        threading.Event().wait(0.1)
        with lock:
            active -= 1
        return x

    study.optimize(slow, n_trials=9, n_jobs=3)
    assert len(study.trials) == 13 and most == 3
    study.optimize(slow, timeout=0.0)  # no new trial after the timeout
    assert len(study.trials) == 13


def test_trials_dataframe(monkeypatch):
    study = paratune.create_study(seed=12)
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=3)
    monkeypatch.setitem(sys.modules, "pandas", None)  # not installed
    with pytest.raises(ImportError, match="trials_dataframe: needs pandas, which is not installed"):
        study.trials_dataframe()
    fake = types.ModuleType("pandas")
    fake.DataFrame = lambda rows: rows
    monkeypatch.setitem(sys.modules, "pandas", fake)
    rows = study.trials_dataframe()
    assert [r["number"] for r in rows] == [0, 1, 2] and all(r["state"] == "COMPLETE" for r in rows)
    assert set(rows[0]) == {"number", "value", "datetime_start", "datetime_complete", "duration", "params_x", "state"}
    # Optuna's default attrs name system_attrs too: accepted, and empty as paratune has none.
    rows = study.trials_dataframe(attrs=("number", "params", "user_attrs", "system_attrs", "state"))
    assert set(rows[0]) == {"number", "params_x", "state"} and study.trials[0].system_attrs == {}


def test_a_kept_trial_refuses_calls_after_its_end():
    kept = []
    study = paratune.create_study(seed=13)
    study.optimize(lambda t: kept.append(t) or t.suggest_float("x", 0.0, 1.0), n_trials=2)
    with pytest.raises(paratune.Error, match=r"trial 0: report: the trial has ended"):
        kept[0].report(1.0, 0)
    assert kept[0].params["x"] == study.trials[0].params["x"]  # still readable
    del study
    gc.collect()
    with pytest.raises(paratune.Error, match="the trial has ended"):
        kept[1].should_prune()


def test_bad_input_names_the_argument_value_and_rule(tmp_path):
    with pytest.raises(paratune.Error, match=r"direction 'up': must be 'minimize' or 'maximize'"):
        paratune.create_study(direction="up")
    with pytest.raises(paratune.Error, match=r"sampler 'grid': grid searches a space given in advance"):
        paratune.create_study(sampler="grid")
    with pytest.raises(paratune.Error, match=r"pruner 'oppa': must be one of"):
        paratune.create_study(pruner="oppa")
    with pytest.raises(paratune.Error, match=r"pruner 'asha': needs steps= \(the steps of a full trial"):
        paratune.create_study(pruner="asha")
    with pytest.raises(paratune.Error, match=r"pruner_options: unknown option 'warmup'; valid: startup_trials, "
                                             r"warmup_steps"):
        paratune.create_study(pruner_options={"warmup": 3})
    with pytest.raises(paratune.Error, match=r"pruner_options.startup_trials 2.5: must be a whole number"):
        paratune.create_study(pruner_options={"startup_trials": 2.5})
    with pytest.raises(paratune.Error, match=r"percentile"):
        paratune.create_study(pruner="percentile", pruner_options={"percentile": 150})
    study = paratune.create_study(seed=1)
    cases = [
        (lambda t: t.suggest_float("x", 2.0, 1.0), r"suggest_float\('x'\): low 2(\.0)? must not be above high 1"),
        (lambda t: t.suggest_float("x", 0.0, 1.0, log=True), r"suggest_float\('x'\): low 0(\.0)? must be above 0 with log"),
        (lambda t: t.suggest_float("x", 0.1, 1.0, step=0.1, log=True), r"step 0.1 and log=True cannot be used together"),
        (lambda t: t.suggest_int("n", 1.5, 4), r"suggest_int\('n'\): low 1.5: must be a whole number"),
        (lambda t: t.suggest_int("n", 1, 4, step=0), r"suggest_int\('n'\): step 0: must be 1 or more"),
        (lambda t: t.suggest_categorical("c", []), r"suggest_categorical\('c'\): choices must not be empty"),
        (lambda t: t.suggest_categorical("c", "ab"), r"suggest_categorical\('c'\): choices 'ab': must be a sequence"),
        (lambda t: (t.suggest_float("x", 0.0, 1.0), t.suggest_int("x", 0, 1)),
         r"'x' was suggested as float in this trial, now as int"),
    ]
    for objective, message in cases:
        with pytest.raises(paratune.Error, match=message):
            study.optimize(objective, n_trials=1)
    with pytest.raises(paratune.Error, match=r"optimize: n_jobs 0: must be from 1 to 256"):
        study.optimize(quadratic, n_trials=1, n_jobs=0)
    with pytest.raises(paratune.Error, match=r"optimize: n_trials -1: must be a whole number >= 0"):
        study.optimize(quadratic, n_trials=-1)
    # A tune() study is not one create_study can go on with.
    paratune.tune(lambda t: t.suggest_float("x"), {"x": {"type": "float", "low": 0, "high": 1}},
                  storage=tmp_path / "t.db", max_trials=1, pruner="none")
    with pytest.raises(paratune.Error, match=r"study_name 'main': the study in .* was not made by create_study"):
        paratune.load_study("main", tmp_path / "t.db")
    assert len(study.trials) == len(cases)  # each misuse: a failed trial, and optimize() raised it


def test_the_porting_guides_paratune_script_runs_as_printed(tmp_path):
    page = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "porting-from-optuna.md")
    blocks = re.findall(r"```python\n(.*?)```", open(page, encoding="utf-8").read(), re.S)
    optuna_script, paratune_script = blocks[0], blocks[1]
    # The two differ only in the module's name, as the guide says.
    assert paratune_script == optuna_script.replace("optuna", "paratune")
    done = subprocess.run([sys.executable, "-c", paratune_script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    best = done.stdout.strip().splitlines()[-1]
    assert best.startswith("{'classifier': ")
    study = paratune.load_study("clf", tmp_path / "study.db")
    assert len(study.trials) == 40 and {t.params["classifier"] for t in study.trials} == {"svm", "forest"}
    assert any(t.state == TrialState.PRUNED for t in study.trials)


def test_a_parameter_asked_again_in_a_trial_gets_its_first_value():
    def objective(trial):
        first = trial.suggest_categorical("c", ["a", "b"])
        assert trial.suggest_categorical("c", ["x", "y", "z"]) is first  # Optuna's rule: the same type, its value
        x = trial.suggest_float("x", 0.0, 1.0)
        assert trial.suggest_float("x", 5.0, 6.0) == x
        assert trial.params == {"c": first, "x": x}
        return x

    study = paratune.create_study(seed=15)
    study.optimize(objective, n_trials=5)
    assert all(t.state == TrialState.COMPLETE for t in study.trials)


def test_enqueued_trials_take_their_values_where_they_fit(tmp_path):
    pair = (1, 2)
    study = paratune.create_study(storage=tmp_path / "s.db", seed=17)
    study.enqueue_trial({"x": 0.25, "n": 40, "c": pair}, user_attrs={"why": "known good"})
    study.enqueue_trial({"x": 7.0, "n": 41})  # x outside its bounds, n off its step grid: drawn instead
    study.enqueue_trial({"x": 0.25, "n": 40, "c": pair}, skip_if_exists=True)  # queued already: skipped

    seen_attrs = []

    def objective(trial):
        seen_attrs.append(dict(trial.user_attrs))  # an enqueued trial's, from the start (as in Optuna)
        x = trial.suggest_float("x", 0.0, 1.0)
        n = trial.suggest_int("n", 0, 100, step=20)
        c = trial.suggest_categorical("c", [None, pair])
        return x + n + (0 if c is None else 1)

    study.optimize(objective, n_trials=4)
    first, second, third = study.trials[:3]
    assert first.params == {"x": 0.25, "n": 40, "c": pair} and first.user_attrs == {"why": "known good"}
    assert seen_attrs[:2] == [{"why": "known good"}, {}]
    assert second.params["x"] != 7.0 and second.params["n"] % 20 == 0
    assert third.params != first.params
    study.enqueue_trial({"x": 0.25, "n": 40, "c": pair}, skip_if_exists=True)  # has run: not queued
    study.optimize(objective, n_trials=1)
    assert study.trials[-1].params != first.params


def test_several_objectives_optuna_style(tmp_path, monkeypatch):
    """create_study(directions=...): the objective returns a tuple, best_trials is the Pareto front,
    the single-objective attributes raise RuntimeError as in Optuna, and the study is stored with its
    objectives (paratune study show reads the same front)."""
    storage = tmp_path / "mo.db"
    study = paratune.create_study(storage=storage, study_name="mo", directions=["minimize", "maximize"],
                                  sampler="random", seed=3)
    assert study.directions == ["minimize", "maximize"]
    told = {0: (1.0, 0.5), 1: (3.0, 0.4), 2: (2.0, 0.9), 3: (0.5, 0.1)}  # trial 2 is dominated by trial 1

    def objective(trial):
        k = trial.suggest_int("k", 0, 3)
        trial.set_user_attr("k", k)
        return told[k]

    for k in range(4):
        study.enqueue_trial({"k": k})
    study.optimize(objective, n_trials=4)
    assert [t.values for t in study.trials] == [list(told[k]) for k in range(4)]
    # The front, in number order: trials 0 (1, 0.5), 2 (2, 0.9), 3 (0.5, 0.1).
    assert [t.number for t in study.best_trials] == [0, 2, 3]
    for name in ("best_trial", "best_params", "best_value", "direction"):
        with pytest.raises(RuntimeError, match="several objectives"):
            getattr(study, name)
    with pytest.raises(RuntimeError, match="use values"):
        study.trials[0].value
    # ask/tell with a list of values; a wrong count fails the trial with a warning, as in Optuna.
    trial = study.ask()
    trial.suggest_int("k", 0, 3)
    with pytest.raises(paratune.Error, match="several objectives"):
        trial.report(1.0, 0)
    with pytest.raises(paratune.Error, match="several objectives"):
        trial.should_prune()
    frozen = study.tell(trial, [0.1, 0.95])
    assert frozen.values == [0.1, 0.95] and frozen.state == TrialState.COMPLETE
    assert [t.number for t in study.best_trials] == [4]
    trial = study.ask()
    with pytest.warns(UserWarning, match="it gave 1 values for the study's 2 objectives"):
        frozen = study.tell(trial, [1.0])
    assert frozen.state == TrialState.FAIL and frozen.values is None
    # An objective that returns one number fails its trial, saying so.
    study.optimize(lambda t: 1.0, n_trials=1)
    assert "not a tuple or list" in study.trials[-1].reason
    # Optuna's trials_dataframe columns values_0, values_1.
    fake = types.ModuleType("pandas")
    fake.DataFrame = lambda rows: rows
    monkeypatch.setitem(sys.modules, "pandas", fake)
    rows = study.trials_dataframe()
    assert rows[0]["values_0"] == 1.0 and rows[0]["values_1"] == 0.5 and "value" not in rows[0]
    # Loaded again: the directions as stored, no pruner by default.
    del study
    gc.collect()
    loaded = paratune.load_study("mo", storage)
    assert loaded.directions == ["minimize", "maximize"] and [t.number for t in loaded.best_trials] == [4]
    # The stored study as every reader sees it (paratune study show reads the same front).
    stored = paratune.open_study(storage, "mo")
    assert stored.directions == ["minimize", "maximize"] and [t.number for t in stored.best_trials] == [5]
    assert stored.best is None and stored.to_dict()["pareto_front"]["trials"][0]["values"] == [0.1, 0.95]
    with pytest.raises(paratune.Error, match="directions"):
        paratune.create_study(storage=storage, study_name="mo", directions=["minimize", "minimize"],
                              load_if_exists=True)
    # What needs one objective is refused.
    with pytest.raises(paratune.Error, match="pruner = median"):
        paratune.create_study(directions=["minimize", "minimize"], pruner="median")
    with pytest.raises(paratune.Error, match="not both"):
        paratune.create_study(direction="minimize", directions=["minimize", "minimize"])
