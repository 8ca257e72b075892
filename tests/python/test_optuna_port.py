"""Porting an Optuna script: what ported code does that Optuna accepts, on create_study's study. Each test is
a case an Optuna 3 script meets; Optuna itself is not needed (its enums are imitated by name)."""

import enum
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import paratune
from paratune.trial import TrialState


def test_optunas_names_where_optuna_keeps_them(tmp_path):
    # A type annotation is evaluated when the function is defined: it must exist.
    def objective(trial: paratune.trial.Trial) -> float:
        return trial.suggest_float("x", -1.0, 1.0) ** 2

    paratune.logging.set_verbosity(paratune.logging.WARNING)
    try:
        assert paratune.logging.get_verbosity() == paratune.logging.WARNING
        study = paratune.create_study(storage=tmp_path / "s.db", sampler=paratune.samplers.TPESampler(seed=3),
                                      pruner=paratune.pruners.MedianPruner(n_startup_trials=2))
        study.optimize(objective, n_trials=50, callbacks=[paratune.study.MaxTrialsCallback(6)])
    finally:
        paratune.logging.set_verbosity(paratune.logging.INFO)
    assert len(study.trials) == 6
    assert isinstance(study, paratune.study.Study) and isinstance(study.trials[0], paratune.trial.FrozenTrial)
    assert study.direction == paratune.study.StudyDirection.MINIMIZE == "minimize"
    assert paratune.exceptions.TrialPruned is paratune.TrialPruned
    # The same seed by name and as a sampler object: the same search.
    by_name = paratune.create_study(sampler="tpe", seed=3)
    by_name.optimize(objective, n_trials=6)
    assert [t.params for t in by_name.trials] == [t.params for t in study.trials]
    # HyperbandPruner's max_resource is a full trial's steps.
    hyperband = paratune.create_study(pruner=paratune.pruners.HyperbandPruner(max_resource=27))
    assert hyperband._engine.pruner == "hyperband"


def test_sampler_and_pruner_objects_say_what_paratune_does_not_do():
    with pytest.raises(paratune.Error, match=r"sampler 'cmaes': cmaes searches a space given in advance, .*: "
                                             r"paratune.tune\(objective, space, sampler='cmaes'\)"):
        paratune.create_study(sampler=paratune.samplers.CmaEsSampler(seed=1))
    with pytest.raises(paratune.Error, match=r"TPESampler: constraints_func is not supported"):
        paratune.samplers.TPESampler(constraints_func=lambda t: [0.0])
    with pytest.warns(UserWarning, match=r"TPESampler: paratune's tpe sampler has its own settings; ignored: gamma, "
                                         r"n_ei_candidates"):
        paratune.samplers.TPESampler(n_ei_candidates=48, gamma=lambda n: 10, multivariate=True)
    with pytest.warns(UserWarning, match=r"MedianPruner: paratune's median pruner does not take interval_steps"):
        paratune.pruners.MedianPruner(interval_steps=5)
    with pytest.raises(paratune.Error, match=r"seed 2: the sampler TPESampler\(seed=1\) has seed 1; give one of them"):
        paratune.create_study(sampler=paratune.samplers.TPESampler(seed=1), seed=2)
    with pytest.raises(paratune.Error, match=r"pruner 'asha': needs steps="):
        paratune.create_study(pruner=paratune.pruners.SuccessiveHalvingPruner())


def test_optunas_own_enums_compare_by_name(tmp_path):
    """Ported code that still imports optuna.trial.TrialState or optuna.study.StudyDirection (IntEnums)."""
    optuna_trial_state = enum.IntEnum("TrialState", ["RUNNING", "COMPLETE", "PRUNED", "FAIL", "WAITING"], start=0)
    optuna_direction = enum.IntEnum("StudyDirection", ["NOT_SET", "MINIMIZE", "MAXIMIZE"], start=0)
    study = paratune.create_study(storage=tmp_path / "s.db", direction=optuna_direction.MAXIMIZE, seed=1)
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=3)
    trial = study.ask()
    study.tell(trial, state=optuna_trial_state.FAIL)
    assert len(study.get_trials(states=[optuna_trial_state.COMPLETE])) == 3
    assert study.trials[0].state == optuna_trial_state.COMPLETE and study.trials[3].state != optuna_trial_state.COMPLETE
    assert study.direction == optuna_direction.MAXIMIZE and study.direction != optuna_direction.MINIMIZE
    assert not study.direction != optuna_direction.MAXIMIZE and study.direction.name == "MAXIMIZE"
    assert TrialState.FAIL in {optuna_trial_state.FAIL} and optuna_trial_state.FAIL in {TrialState.FAIL}
    assert {TrialState.COMPLETE: "done"}[optuna_trial_state.COMPLETE] == "done"
    assert not TrialState.COMPLETE != optuna_trial_state.COMPLETE and TrialState.COMPLETE != optuna_trial_state.FAIL
    assert TrialState.COMPLETE == 1 and not TrialState.WAITING.is_finished()  # IntEnums, as Optuna's


class Optimizer(str, enum.Enum):
    ADAM = "adam"
    SGD = "sgd"


def test_numpy_scalars_and_enum_members_are_choices_given_back_as_themselves(tmp_path):
    lists = {"lr": list(np.logspace(-4, -1, 4)), "width": list(np.array([16, 32], dtype=np.int32)),
             "name": [np.str_("a"), np.str_("b")], "flag": [np.bool_(True), np.bool_(False)],
             "optimizer": [Optimizer.ADAM, Optimizer.SGD]}

    def objective(trial):
        for name, choices in lists.items():
            got = trial.suggest_categorical(name, choices)
            assert any(got is c for c in choices), (name, got)
        return float(trial.params["lr"])

    study = paratune.create_study(storage=tmp_path / "s.db", sampler="random", seed=2)
    study.enqueue_trial({"lr": np.float64(1e-2), "width": np.int32(32)})
    study.optimize(objective, n_trials=8)
    assert all(t.state == TrialState.COMPLETE for t in study.trials), [t.reason for t in study.trials]
    assert study.trials[0].params["lr"] == pytest.approx(1e-2) and study.trials[0].params["width"] == 32
    assert study.best_params["optimizer"] in (Optimizer.ADAM, Optimizer.SGD)  # the objects listed
    stored = paratune.load_study(None, tmp_path / "s.db").trials[0].params
    assert stored["optimizer"] in ("<Optimizer.ADAM: 'adam'>", "<Optimizer.SGD: 'sgd'>")  # as stored: repr()


def test_a_diverged_report_stops_the_trial_and_never_the_study(tmp_path):
    """A NaN (or inf) report is warned of and not stored; the trial's pruner stops it, as Optuna's do."""
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        for step in range(5):
            trial.report(float("nan") if x > 0.5 and step == 2 else x, step)
            if trial.should_prune():
                raise paratune.TrialPruned()
        return x

    study = paratune.create_study(storage=tmp_path / "s.db", sampler="random", seed=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study.optimize(objective, n_trials=12)
    for t in study.trials:
        if t.params["x"] > 0.5:
            assert t.state == TrialState.PRUNED and sorted(t.intermediate_values) == [0, 1], t
        else:
            assert t.state == TrialState.COMPLETE
    assert any("value nan at step 2 is not a finite number" in str(w.message) for w in caught)
    # No pruner: the trial goes on.
    plain = paratune.create_study(pruner="none", seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain.optimize(objective, n_trials=6)
    assert all(t.state == TrialState.COMPLETE for t in plain.trials)


def test_reports_of_torch_and_numpy_scalars_in_any_step_order():
    torch = pytest.importorskip("torch")

    def objective(trial):
        for step in (3, 0, 2, 1):  # any order, as Optuna keeps them
            trial.report(torch.tensor(0.1 * step) if step % 2 else np.float32(0.1 * step), step)
        return torch.tensor(1.5)

    study = paratune.create_study(seed=5)
    study.optimize(objective, n_trials=1)
    t = study.trials[0]
    assert t.state == TrialState.COMPLETE and t.value == 1.5
    assert sorted(t.intermediate_values) == [0, 1, 2, 3]
    assert t.intermediate_values[3] == pytest.approx(0.3)


def test_returns_optuna_takes_and_ones_it_fails():
    study = paratune.create_study(seed=6)
    study.optimize(lambda t: [t.suggest_float("x", 0.0, 1.0)], n_trials=2)  # one value in a list
    study.optimize(lambda t: np.float64(t.suggest_float("x", 0.0, 1.0)), n_trials=1)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    # Not one number (an array of two): the trial fails, saying so; the study goes on.
    study.optimize(lambda t: np.array([t.suggest_float("x", 0.0, 1.0), 1.0]), n_trials=1)
    assert study.trials[-1].state == TrialState.FAIL and "not a number" in study.trials[-1].reason
    assert study.ask().trial_id == 5  # paratune's number of the trial (Optuna's number 4)


def test_load_study_takes_the_stored_pruner_and_the_only_study(tmp_path):
    storage = tmp_path / "s.db"

    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        for step in range(9):
            trial.report(x, step)
            if trial.should_prune():
                raise paratune.TrialPruned()
        return x

    paratune.create_study(storage=storage, study_name="hb", pruner="hyperband", steps=9,
                          pruner_options={"eta": 3}, seed=1).optimize(objective, n_trials=6)
    loaded = paratune.load_study("hb", storage)  # no pruner given: the stored one, with its settings
    assert loaded._engine.pruner == "hyperband"
    loaded.optimize(objective, n_trials=3)
    assert len(loaded.trials) == 9
    again = paratune.create_study(storage=storage, study_name="hb", load_if_exists=True)
    assert again._engine.pruner == "hyperband"
    assert paratune.load_study(None, storage).study_name == "hb"  # the only study
    with pytest.raises(paratune.Error, match=r"study_name 'hb': .* holds it with other settings: pruner.pruner is "
                                             r"\"median\" now, \"hyperband\" when the study was created"):
        paratune.load_study("hb", storage, pruner="median")
    # No name: a new study each time (Optuna's no-name-UUID); then load_study must be told which.
    first = paratune.create_study(storage=storage)
    second = paratune.create_study(storage=storage)
    assert first.study_name.startswith("no-name-") and first.study_name != second.study_name
    with pytest.raises(paratune.Error, match=r"study_name None: .* holds 3 studies, so name one \(it has: hb, "):
        paratune.load_study(None, storage)
    with pytest.raises(paratune.Error, match=r"load_study: study_name '': must be a non-empty str, or None"):
        paratune.load_study("", storage)
    with pytest.raises(paratune.Error, match=r"steps 5: study 'hb' in .* was created with steps 9; give those, or none"):
        paratune.create_study(storage=storage, study_name="hb", load_if_exists=True, steps=5)
    # A setting given on load is taken over the stored ones (here the same eta: the study loads).
    assert paratune.load_study("hb", storage, pruner_options={"eta": 3})._engine.pruner == "hyperband"
    with pytest.raises(paratune.Error, match=r"holds it with other settings"):
        paratune.load_study("hb", storage, pruner_options={"eta": 2})


def test_a_second_process_runs_trials_beside_the_one_running_a_trial(tmp_path):
    """Another process is in a trial (asked, not told): load_study and reading work, and so does running
    trials from here (Optuna's distributed optimization); the numbers continue the study's."""
    storage = tmp_path / "s.db"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, paratune
        study = paratune.create_study(storage={str(storage)!r}, study_name="w", seed=1)
        study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=3)
        study.ask()
        print("holding", flush=True)
        sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        reader = paratune.load_study("w", storage)
        assert len(reader.trials) == 4 and reader.best_value == min(t.value for t in reader.trials[:3])
        reader.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=2)
        assert [t.number for t in reader.trials] == [0, 1, 2, 3, 4, 5]
        assert [t.state for t in reader.trials][3:] == [TrialState.RUNNING, TrialState.COMPLETE, TrialState.COMPLETE]
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0


def test_the_same_script_in_two_processes_runs_one_study(tmp_path):
    """Optuna's distributed optimization (its tutorial's idiom): one script started twice on one storage.
    Every trial of both is in the one study, numbered without gaps or repeats, each told once."""
    storage = f"sqlite:///{tmp_path / 's.db'}"
    paratune.create_study(study_name="dist", storage=storage)
    script = textwrap.dedent(f"""
        import paratune
        study = paratune.load_study(study_name="dist", storage={storage!r})
        study.optimize(lambda t: (t.suggest_float("x", -10, 10) - 2) ** 2, n_trials=15)
        """)
    workers = [subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for w in workers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    study = paratune.load_study("dist", storage)
    assert [t.number for t in study.trials] == list(range(30))
    assert {t.state for t in study.trials} == {TrialState.COMPLETE}
    assert len({t.worker for t in paratune.open_study(tmp_path / "s.db", "dist").trials}) == 2


def test_steps_reported_out_of_order_are_stored_in_step_order(tmp_path):
    def objective(trial):
        for step in (2, 0, 1):
            trial.report(float(step), step)
        return 1.0

    paratune.create_study(storage=tmp_path / "s.db", study_name="o", seed=1).optimize(objective, n_trials=1)
    stored = paratune.open_study(tmp_path / "s.db", "o").trials[0]
    assert [step for step, _ in stored.values("value")] == [0, 1, 2]
    assert paratune.load_study("o", tmp_path / "s.db").trials[0].intermediate_values == {0: 0.0, 1: 1.0, 2: 2.0}


def test_enqueue_skips_what_ran_and_metrics_that_diverge_are_dropped(tmp_path):
    pair = (3, 4)
    study = paratune.create_study(storage=tmp_path / "s.db", seed=2)

    def objective(trial):
        with pytest.warns(UserWarning, match=r"report_metric\('loss'\): value nan is not a finite number; not stored"):
            trial.report_metric("loss", float("nan"))
        return float(trial.suggest_categorical("c", [pair, None]) is None)

    study.enqueue_trial({"c": pair})
    study.optimize(objective, n_trials=1)
    study.enqueue_trial({"c": pair}, skip_if_exists=True)  # ran already (stored as its repr): skipped
    study.optimize(objective, n_trials=1)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    assert study.trials[0].params["c"] is pair


def test_dependent_bounds_are_modelled_by_name():
    """A bound set by an earlier value (Optuna's idiom) is the same parameter: the sampler learns it from every
    trial whose value falls inside today's bounds (it was drawn at random before)."""
    def objective(trial):
        lo = trial.suggest_float("lo", 0.0, 1.0)
        x = trial.suggest_float("x", lo, lo + 10.0)
        return (x - 7.3) ** 2 + lo

    late = []
    for seed in range(3):
        study = paratune.create_study(seed=seed)
        study.optimize(objective, n_trials=60)
        late += [t.value for t in study.trials[-20:]]
    # Drawn at random, x in [lo, lo + 10] gives (x - 7.3)^2 a median of about 6; modelled, under 1.5.
    assert float(np.median(late)) < 1.5, sorted(late)


def test_misuses_optuna_refuses_are_refused():
    study = paratune.create_study(seed=7)
    trial = study.ask()
    with pytest.raises(paratune.Error, match=r"set_user_attr: key 5: must be a str"):
        trial.set_user_attr(5, "x")
    with pytest.raises(paratune.Error, match=r"suggest_float\('x'\): step 0(\.0)?: must be a positive number"):
        trial.suggest_float("x", 0.0, 1.0, step=0)
    assert trial.suggest_uniform("u", 0.0, 1.0) <= 1.0 and trial.suggest_loguniform("l", 1e-3, 1.0) >= 1e-3
    assert trial.suggest_discrete_uniform("d", 0.0, 1.0, 0.5) in (0.0, 0.5, 1.0)


def test_numpy_whole_numbers_are_counts_and_seeds():
    study = paratune.create_study(sampler=paratune.samplers.TPESampler(seed=np.int64(3), n_startup_trials=np.int64(2)))
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=np.int64(3), n_jobs=np.int32(1))
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), callbacks=[paratune.study.MaxTrialsCallback(np.int64(5))])
    assert len(study.trials) == 5
    with pytest.raises(paratune.Error, match=r"optimize: n_trials 3.0: must be a whole number >= 0 \(an int\)"):
        study.optimize(lambda t: 0.0, n_trials=3.0)


def test_user_attrs_of_numpy_and_torch_values_are_stored_as_python_numbers(tmp_path):
    torch = pytest.importorskip("torch")

    def objective(trial):
        trial.set_user_attr("argmax", np.argmax([1, 5, 2]))
        trial.set_user_attr("curve", np.array([0.5, 0.25], dtype=np.float32))
        trial.set_user_attr("loss", torch.tensor(0.125))
        trial.set_user_attr("nested", {"n": np.int32(4), "list": [np.float64(1.5)]})
        return 0.0

    study = paratune.create_study(storage=tmp_path / "s.db", seed=1)
    study.optimize(objective, n_trials=1)
    stored = paratune.load_study(None, tmp_path / "s.db").trials[0].user_attrs
    assert stored == {"argmax": 1, "curve": [0.5, 0.25], "loss": 0.125, "nested": {"n": 4, "list": [1.5]}}
    with pytest.raises(paratune.Error, match=r"set_user_attr\('s'\): cannot be read as JSON"):
        study.ask().set_user_attr("s", {1, 2})


def test_a_stored_trial_is_a_trial_for_the_objective_again_and_compares_as_optunas():
    """Optuna's tutorial 'Re-use the best trial': objective(study.best_trial)."""
    def objective(trial):
        x = trial.suggest_float("x", -1.0, 1.0)
        kind = trial.suggest_categorical("kind", ["a", "b"])
        trial.report(x, 0)
        if trial.should_prune():
            raise paratune.TrialPruned()
        trial.set_user_attr("seen", True)
        return x * x + (kind == "b")

    study = paratune.create_study(seed=2)
    study.optimize(objective, n_trials=6)
    best = study.best_trial
    assert objective(best) == best.value
    assert best == study.best_trial and best in study.best_trials and study.trials[0] != study.trials[1]
    assert [t.number for t in sorted(reversed(study.trials))] == list(range(6))
    with pytest.raises(paratune.Error, match=r"the value of the parameter 'y' is not found"):
        best.suggest_int("y", 0, 1)


def test_optunas_exception_classes_and_logging_helpers(tmp_path):
    storage = tmp_path / "s.db"
    paratune.create_study(storage=storage, study_name="s")
    with pytest.raises(paratune.exceptions.DuplicatedStudyError, match=r"has a study of that name already"):
        paratune.create_study(storage=storage, study_name="s")
    with pytest.raises(KeyError):  # Optuna's: try load_study, except KeyError: create_study
        paratune.load_study("other", storage)
    with pytest.raises(paratune.Error, match=r"^study_name 'other': .* has no such study \(it has: s\)$"):
        paratune.load_study("other", storage)
    assert paratune.logging.get_logger("mine").name == "mine"
    paratune.logging.disable_propagation()
    paratune.logging.enable_propagation()
    study = paratune.create_study()
    with pytest.raises(paratune.Error, match=r"tell: values 1.0 with state PRUNED: only a COMPLETE trial has values"):
        study.tell(study.ask(), 1.0, state=TrialState.PRUNED)


def test_storage_urls_optuna_scripts_use_and_optunas_own_files(tmp_path):
    import sqlite3

    study = paratune.create_study(storage=f"sqlite:///{tmp_path / 'a.db'}?timeout=30", study_name="a")
    assert study.storage == str(tmp_path / "a.db")
    assert paratune.create_study(storage="sqlite://").storage.endswith(".db")  # in memory: a temporary file
    with pytest.raises(paratune.Error, match=r"storage 'mysql://u@h/db': paratune stores studies in SQLite files and "
                                             r"PostgreSQL; not in mysql"):
        paratune.create_study(storage="mysql://u@h/db")
    # An Optuna storage: refused, and left as it was.
    optuna_file = tmp_path / "optuna.db"
    with sqlite3.connect(optuna_file) as db:
        db.execute("CREATE TABLE version_info (version_info_id INTEGER PRIMARY KEY, schema_version INTEGER)")
    before = optuna_file.read_bytes()
    with pytest.raises(paratune.Error, match=r"not a paratune study file: it holds another program's tables "
                                             r"\(version_info\) and no paratune schema"):
        paratune.create_study(storage=f"sqlite:///{optuna_file}")
    assert optuna_file.read_bytes() == before


def test_a_fixed_trial_runs_the_objective_again_with_chosen_values(tmp_path):
    def objective(trial):
        x = trial.suggest_float("x", -5.0, 5.0)
        depth = trial.suggest_int("depth", 1, 9, step=2)
        kind = trial.suggest_categorical("kind", ["a", None])
        trial.report(x, 0)
        assert not trial.should_prune()
        return x * x + depth + (1 if kind == "a" else 0)

    study = paratune.create_study(storage=tmp_path / "s.db", study_name="f", seed=4)
    study.optimize(objective, n_trials=6)
    fixed = paratune.trial.FixedTrial(study.best_params)
    assert objective(fixed) == study.best_value and fixed.params == study.best_params
    with pytest.warns(UserWarning, match=r"suggest_int\('depth'\): the fixed value 4 is not in "
                                          r"IntDistribution\(low=1, high=9, log=False, step=2\)"):
        objective(paratune.trial.FixedTrial({"x": 0.0, "depth": 4, "kind": None}))
    with pytest.raises(ValueError, match=r"suggest_int\('depth'\): the parameter 'depth' is not among the "
                                         r"FixedTrial's params \('x'\)"):
        objective(paratune.trial.FixedTrial({"x": 0.0}))


def test_the_studies_of_a_storage_are_listed_and_summarized(tmp_path):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    paratune.create_study(storage=storage, study_name="one", seed=1).optimize(
        lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=3)
    paratune.create_study(storage=storage, study_name="two", directions=["minimize", "maximize"], seed=1)
    assert paratune.study.get_all_study_names(storage) == ["one", "two"]
    one, two = paratune.get_all_study_summaries(storage)
    assert (one.study_name, one.n_trials, one.direction) == ("one", 3, paratune.study.StudyDirection.MINIMIZE)
    assert one.best_trial == paratune.load_study("one", storage).best_trial
    assert one.datetime_start <= one.best_trial.datetime_start
    assert (two.n_trials, two.direction, two.best_trial, two.datetime_start) == (0, None, None, None)
    assert [str(d) for d in two.directions] == ["minimize", "maximize"]
    assert paratune.get_all_study_summaries(storage, include_best_trial=False)[0].best_trial is None
    with pytest.raises(paratune.Error, match="an in-memory storage belongs to its study object"):
        paratune.study.get_all_study_names(None)


def test_a_define_by_run_studys_report_has_importance_from_the_space_its_trials_revealed(tmp_path):
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        if x > 0.5:
            trial.suggest_int("depth", 1, 64, log=True)
        trial.suggest_categorical("noise", ["a", "b"])
        return 10 * x

    study = paratune.create_study(storage=tmp_path / "s.db", study_name="r", sampler="random", seed=2)
    study.optimize(objective, n_trials=16)
    data = paratune.open_study(tmp_path / "s.db", "r").to_dict()
    assert data["parameters"]["depth"] == {"type": "int", "log": True, "low": 1, "high": 64}
    assert data["importance"][0]["parameter"] == "x"


def test_known_results_are_added_as_trials_the_search_goes_on_from(tmp_path):
    from paratune.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
    distributions = {"lr": FloatDistribution(1e-4, 1e-1, log=True), "layers": IntDistribution(1, 9, step=2),
                     "act": CategoricalDistribution(["relu", None])}
    known = [paratune.trial.create_trial(params={"lr": 1e-3, "layers": 3, "act": None}, distributions=distributions,
                                         value=0.25, user_attrs={"from": "notebook"},
                                         intermediate_values={0: 0.9, 1: 0.5}),
             paratune.create_trial(params={"lr": 1e-2, "layers": 5, "act": "relu"}, distributions=distributions,
                                   state=TrialState.PRUNED, intermediate_values={0: 0.95}),
             paratune.trial.create_trial(params={"lr": 0.05, "layers": 1, "act": "relu"}, distributions=distributions,
                                         state=TrialState.FAIL)]
    assert known[0].number == -1 and known[0].value == 0.25 and known[1].value == 0.95  # pruned: its last report
    study = paratune.create_study(storage=tmp_path / "s.db", study_name="warm", seed=2)
    study.add_trials(known)
    trials = study.trials
    assert [t.number for t in trials] == [0, 1, 2]
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL]
    assert trials[0].params == {"lr": 1e-3, "layers": 3, "act": None} and trials[0].value == 0.25
    assert trials[0].distributions == distributions and trials[0].user_attrs == {"from": "notebook"}
    assert trials[0].intermediate_values == {0: 0.9, 1: 0.5} and trials[1].intermediate_values == {0: 0.95}
    assert study.best_trial.number == 0

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        trial.suggest_int("layers", 1, 9, step=2)
        trial.suggest_categorical("act", ["relu", None])
        return abs(np.log10(lr) + 3)

    study.optimize(objective, n_trials=4)
    assert [t.number for t in study.trials] == list(range(7))
    # Copied into another study as they are (Optuna's idiom for moving trials between studies).
    copy = paratune.create_study(storage=tmp_path / "s.db", study_name="copy", seed=2)
    copy.add_trials(study.trials)
    assert [(t.params, t.state, t.value) for t in copy.trials] == [(t.params, t.state, t.value) for t in study.trials]
    # paratune's own readers see them as any other trial.
    assert len(paratune.open_study(tmp_path / "s.db", "copy")) == 7


def test_a_made_trial_that_cannot_be_true_is_refused_with_its_reason(tmp_path):
    from paratune.distributions import FloatDistribution, IntDistribution
    x = {"x": FloatDistribution(0.0, 1.0)}
    cases = [
        (dict(params={"x": 2.0}, distributions=x, value=1.0), r"params\['x'\] 2\.0: not in its distribution "
                                                              r"FloatDistribution\(low=0\.0, high=1\.0"),
        (dict(params={"x": 0.5}, distributions={}, value=1.0), r"params \['x'\] and distributions \[\] must name"),
        (dict(params={"x": 0.5}, distributions=x), r"state COMPLETE: needs value"),
        (dict(params={"x": 0.5}, distributions=x, state=TrialState.PRUNED, value=1.0), r"state PRUNED: takes no value"),
        (dict(params={"x": 0.5}, distributions=x, state=TrialState.RUNNING), r"state RUNNING: paratune creates "
                                                                             r"finished trials only"),
        (dict(params={"x": 0.5}, distributions=x, value=float("nan")), r"values \[nan\]: must be finite numbers"),
        (dict(params={"x": 0.5}, distributions={"x": {"type": "float"}}, value=1.0), r"must be a "
                                                                                     r"paratune\.distributions object"),
    ]
    for arguments, message in cases:
        with pytest.raises(paratune.Error, match=message):
            paratune.trial.create_trial(**arguments)
    for make, message in [(lambda: FloatDistribution(1.0, 0.0), r"low 1\.0 must be <= high 0\.0"),
                          (lambda: FloatDistribution(0.0, 1.0, log=True), r"low 0\.0 with log=True: must be > 0"),
                          (lambda: FloatDistribution(1.0, 2.0, log=True, step=0.5), r"a distribution has one or"),
                          (lambda: IntDistribution(0, 8, step=0), r"step 0: must be 1 or more"),
                          (lambda: IntDistribution(0.5, 8), r"low 0\.5: must be a finite whole number")]:
        with pytest.raises(ValueError, match=message):
            make()
    two = paratune.create_study(storage=tmp_path / "s.db", study_name="two", directions=["minimize", "minimize"])
    with pytest.raises(paratune.Error, match=r"1 values \[1\.0\]; this study has 2 objective"):
        two.add_trial(paratune.trial.create_trial(params={"x": 0.5}, distributions=x, value=1.0))
    assert two.trials == []  # nothing stored


def test_parameter_importances_as_optuna_returns_them(tmp_path):
    rng = np.random.default_rng(0)

    def objective(trial):
        x = trial.suggest_float("x", -3.0, 3.0)
        trial.suggest_float("noise", 0.0, 1.0)
        return x * x + 0.01 * rng.standard_normal()

    study = paratune.create_study(storage=tmp_path / "s.db", sampler="random", seed=5)
    study.optimize(objective, n_trials=4)
    with pytest.raises(paratune.Error, match=r"4 completed trial\(s\) are too few to measure importance"):
        paratune.importance.get_param_importances(study)
    study.optimize(objective, n_trials=36)
    importances = paratune.importance.get_param_importances(study)
    assert list(importances) == ["x", "noise"] and importances["x"] > 0.9
    assert sum(importances.values()) == pytest.approx(1.0)
    raw = paratune.importance.get_param_importances(study, normalize=False, params=["noise"])
    assert list(raw) == ["noise"] and 0.0 <= raw["noise"] < 0.1
    with pytest.raises(paratune.Error, match=r"params \['depth'\]: not parameters of study"):
        paratune.importance.get_param_importances(study, params=["depth"])
    with pytest.raises(paratune.Error, match=r"evaluator 'fanova': paratune has one measure"):
        paratune.importance.get_param_importances(study, evaluator="fanova")
    # An in-memory study too (its storage is a file paratune keeps for it).
    memory = paratune.create_study(sampler="random", seed=5)
    memory.optimize(objective, n_trials=40)
    assert list(paratune.importance.get_param_importances(memory))[0] == "x"


def test_studies_are_deleted_and_copied_as_optuna_does_it(tmp_path):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    study = paratune.create_study(storage=storage, study_name="old", seed=1)
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=5)
    paratune.copy_study(from_study_name="old", from_storage=storage, to_storage=tmp_path / "other.db",
                        to_study_name="new")
    copied = paratune.load_study(study_name="new", storage=tmp_path / "other.db")
    assert [(t.params, t.value) for t in copied.trials] == [(t.params, t.value) for t in study.trials]
    copied.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=2)  # goes on where it was
    assert [t.number for t in copied.trials] == list(range(7))
    with pytest.raises(paratune.exceptions.DuplicatedStudyError, match=r"already holds a study 'new'"):
        paratune.study.copy_study(from_study_name="old", from_storage=storage, to_storage=tmp_path / "other.db",
                                  to_study_name="new")
    # Not while a trial of it runs (its process holds the study's lock).
    running = study.ask()
    with pytest.raises(paratune.Error, match=r"running"):
        paratune.delete_study(study_name="old", storage=storage)
    study.tell(running, 0.5)
    # Optuna's idiom: delete a study, ignoring a missing one (a KeyError).
    paratune.delete_study(study_name="old", storage=storage)
    assert paratune.study.get_all_study_names(storage) == []
    with pytest.raises(KeyError, match=r"unknown study 'old': it holds no study"):
        paratune.delete_study(study_name="old", storage=storage)
    with pytest.raises(paratune.exceptions.StudyNotFoundError, match=r"unknown study 'nwe' \(did you mean 'new'\?\)"):
        paratune.study.delete_study("nwe", tmp_path / "other.db")
    with pytest.raises(paratune.Error, match=r"no such study file"):
        paratune.delete_study(study_name="old", storage=tmp_path / "missing.db")
    paratune.delete_study(study_name="new", storage=tmp_path / "other.db")
    assert paratune.study.get_all_study_names(tmp_path / "other.db") == []


def test_added_trials_take_their_own_values_and_never_stay_running(tmp_path):
    from paratune.distributions import FloatDistribution, IntDistribution
    x = {"x": FloatDistribution(0.0, 1.0)}
    study = paratune.create_study(storage=tmp_path / "s.db", study_name="q", sampler="random", seed=1)
    # The user's queue and an added trial: each keeps its own values (the added one goes first).
    study.enqueue_trial({"x": 0.9})
    study.add_trial(paratune.create_trial(params={"x": 0.1}, distributions=x, value=5.0))
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=1)
    assert [(t.params["x"], t.value) for t in study.trials] == [(0.1, 5.0), (0.9, 0.9)]
    # A value the engine refuses after create_trial accepted it: stored as failed, saying why, never running.
    big = paratune.create_trial(params={"n": 2**62}, distributions={"n": IntDistribution(0, 2**63)}, value=1.0)
    with pytest.raises(paratune.Error, match=r"n"):
        study.add_trial(big)
    last = study.trials[-1]
    assert last.state == TrialState.FAIL and last.reason.startswith("add_trial: ")
    assert all(t.state != TrialState.RUNNING for t in study.trials)
    paratune.delete_study("q", tmp_path / "s.db")  # nothing holds it
    # Several objectives: trials copied between studies, without a learning curve.
    old = paratune.create_study(storage=tmp_path / "m.db", study_name="old", directions=["minimize", "maximize"])
    old.optimize(lambda t: (t.suggest_float("x", 0.0, 1.0), 7.0), n_trials=3)
    assert all(t.intermediate_values == {} for t in old.trials)
    new = paratune.create_study(storage=tmp_path / "m.db", study_name="new", directions=["minimize", "maximize"])
    new.add_trials(old.trials)
    assert [(t.params, t.values) for t in new.trials] == [(t.params, t.values) for t in old.trials]
    # A failed trial keeps why it failed when it is copied.
    failing = paratune.create_study(storage=tmp_path / "m.db", study_name="failing")
    failing.optimize(lambda t: t.suggest_float("x", 0.0, 1.0) / 0, n_trials=1, catch=(ZeroDivisionError,))
    again = paratune.create_study(storage=tmp_path / "m.db", study_name="again")
    again.add_trials(failing.trials)
    assert again.trials[0].state == TrialState.FAIL and again.trials[0].reason == failing.trials[0].reason != ""
    # A categorical integer beyond 64 bits is stored as its repr() and given back as itself.
    huge = paratune.create_study(storage=tmp_path / "h.db", seed=1)
    huge.optimize(lambda t: float(t.suggest_categorical("k", [2**70, 3]) > 3), n_trials=4)
    assert {t.params["k"] for t in huge.trials} <= {2**70, 3}
    with pytest.raises(ValueError, match=r"1 is listed twice"):
        paratune.distributions.CategoricalDistribution([1, 2, 1])
    # A step's grid ends where Optuna's does, and a trial's stored distribution equals the one asked for.
    assert FloatDistribution(0.0, 1.0, step=0.3).high == 0.9 and IntDistribution(0, 10, step=3).high == 9
    grid = paratune.create_study(storage=tmp_path / "g.db", sampler="random", seed=3)
    grid.optimize(lambda t: t.suggest_float("f", 0.0, 1.0, step=0.3), n_trials=3)
    assert grid.trials[0].distributions["f"] == FloatDistribution(0.0, 1.0, step=0.3)


def test_importances_list_every_parameter_and_survive_huge_values(tmp_path):
    study = paratune.create_study(storage=tmp_path / "s.db", sampler="random", seed=1)
    study.optimize(lambda t: (t.suggest_float("x", 0.0, 1.0) + 0.01 * t.suggest_float("y", 0.0, 1.0)
                              + t.suggest_int("one", 3, 3)), n_trials=30)
    importances = paratune.importance.get_param_importances(study)
    assert list(importances)[0] == "x" and importances["one"] == 0.0 and set(importances) == {"x", "y", "one"}
    with pytest.raises(paratune.Error, match=r"params 'xy': must be a list of parameter names"):
        paratune.importance.get_param_importances(study, params="xy")
    large = paratune.create_study(storage=tmp_path / "l.db", sampler="random", seed=1)
    large.optimize(lambda t: (t.suggest_float("x", 0, 1) + t.suggest_float("y", 0, 1)) * 1e200, n_trials=20)
    result = paratune.importance.get_param_importances(large)  # the share does not depend on the scale
    assert set(result) == {"x", "y"} and sum(result.values()) == pytest.approx(1.0)
