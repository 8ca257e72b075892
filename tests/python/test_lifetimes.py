"""Objects the module hands to Python never outlive what they point to (issue 39, item 2).

An objective may keep its Trial, raise exceptions whose text cannot be converted, or hand its trial to a
thread; result objects may outlive the call that made them. None of it may crash Python or reach into a
run that has ended: a Trial after its run is a clear paratune.Error. What could crash runs in a child
interpreter, so that a crash fails one test instead of killing the test runner.
"""

import os
import subprocess
import sys
import textwrap

import pytest

import paratune

SPACE = {"lr": {"type": "float", "low": 0.001, "high": 1.0, "log": True}}


def run_python(code, tmp_path):
    """Runs `code` in a child interpreter (the same module, PYTHONPATH as ours) in tmp_path; returns its
    stdout. A crash (a signal) or any exit but 0 fails the test with what the child printed."""
    prelude = "import gc, json, sys, threading\nimport paratune\n"
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=tmp_path, env=os.environ.copy(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (f"the child exited with {done.returncode}"
                                  f"{' (killed by signal %d)' % -done.returncode if done.returncode < 0 else ''}\n"
                                  f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}")
    return done.stdout


class UnreadableMessage(Exception):
    def __str__(self):
        raise RuntimeError("no message today")


class NotAStringMessage(Exception):
    def __str__(self):
        return 42


@pytest.mark.parametrize("error, reason", [
    (ValueError("bad byte \udc80 here"), r"ValueError: bad byte \udc80 here"),
    (UnreadableMessage(), "UnreadableMessage (its message could not be read: RuntimeError: no message today)"),
    (NotAStringMessage(), "NotAStringMessage (its message could not be read: TypeError: __str__ returned "
                          "non-string (type int))"),
])
def test_an_exception_whose_text_cannot_be_converted_fails_its_trial_and_the_study_goes_on(tmp_path, error, reason):
    def objective(trial):
        trial.suggest_float("lr")
        raise error

    study = paratune.tune(objective, SPACE, storage=tmp_path / "s.db", max_trials=3, sampler="random", pruner="none")
    assert [t.status for t in study] == ["failed"] * 3
    assert [t.reason for t in study] == [reason] * 3


def test_unconvertible_texts_of_pruned_interrupted_and_returned_values(tmp_path):
    class Unprintable:
        def __float__(self):
            raise ValueError("not a number \udc80")

        def __repr__(self):
            raise RuntimeError("no repr either")

    def objective(trial):
        if trial.number == 1:
            raise paratune.TrialPruned("pruned \udc80")
        if trial.number == 2:
            return Unprintable()
        raise KeyboardInterrupt("stop \udc80")

    with pytest.raises(KeyboardInterrupt):
        paratune.tune(objective, SPACE, storage=tmp_path / "s.db", max_trials=5, sampler="random", pruner="none")
    study = paratune.open_study(tmp_path / "s.db")
    assert [(t.status, t.reason) for t in study] == [
        ("pruned", r"the objective raised TrialPruned: pruned \udc80"),
        ("failed", "the objective returned an object of type Unprintable (its repr could not be read: "
                   "RuntimeError: no repr either), not a number"),
        ("interrupted", r"KeyboardInterrupt: stop \udc80"),
    ]


def test_a_trial_kept_past_a_failed_run_is_an_error_not_a_crash(tmp_path):
    # The report: the objective keeps its trial and raises a lone surrogate; the kept trial's
    # report() after tune() segfaulted.
    out = run_python(r"""
        kept = []
        def objective(trial):
            kept.append(trial)
            trial.report(trial.suggest_float("lr"), 0)
            raise ValueError("\udc80")
        try:
            paratune.tune(objective, {"lr": {"type": "float", "low": 0.001, "high": 1.0}}, storage="s.db",
                          max_trials=2, sampler="random", pruner="none")
        except Exception as e:  # what the issue saw: an unrelated RuntimeError, then a crash below
            print("tune raised", type(e).__name__)
        print([t.status for t in paratune.open_study("s.db")])
        for call in (lambda t: t.report(1.0, 10), lambda t: t.report_metric("loss", 1.0),
                     lambda t: t.should_prune(), lambda t: t.suggest_float("lr")):
            try:
                call(kept[0])
                print("no error")
            except paratune.Error as e:
                print(str(e))
        print(kept[0].number, sorted(kept[0].params))  # its own data stays readable
    """, tmp_path)
    ended = "the trial has ended (its objective call returned or raised); use a trial only inside the objective " \
            "call it was given to"
    assert out.splitlines() == [
        "['failed', 'failed']",
        f"trial 1: report: {ended}",
        f"trial 1: report_metric: {ended}",
        f"trial 1: should_prune: {ended}",
        f"trial 1: suggest_float: {ended}",
        "1 ['lr']",
    ]


def test_a_kept_trial_cannot_reach_another_runs_study(tmp_path):
    # The report: inside a second tune() on another file, the first run's kept trial added steps
    # to that study's trial 1.
    out = run_python(r"""
        space = {"lr": {"type": "float", "low": 0.001, "high": 1.0}}
        kept = []
        def first(trial):
            kept.append(trial)
            raise ValueError("\udc80")
        try:
            paratune.tune(first, space, storage="first.db", max_trials=1, pruner="none")
        except Exception as e:
            print("tune raised", type(e).__name__)
        def second(trial):
            try:
                kept[0].report(5.0, 1)
                print("reported")
            except paratune.Error as e:
                print("refused:", e)
            return trial.suggest_float("lr")
        study = paratune.tune(second, space, storage="second.db", max_trials=1, pruner="none")
        print(study.trials[0].status, study.trials[0].values("value"))
    """, tmp_path)
    lines = out.splitlines()
    assert lines[0].startswith("refused: trial 1: report: the trial has ended"), out
    assert lines[1] == "completed []"


def test_a_thread_reporting_on_an_ended_trial_gets_an_error(tmp_path):
    # A thread the objective started outlives the call: its calls race the trial's end and the run's.
    out = run_python(r"""
        outcome = []
        def keep_reporting(trial):
            step = 1
            try:
                while True:
                    trial.report(0.5, step)
                    trial.report_metric("other", 0.5)
                    trial.should_prune()
                    step += 1
            except paratune.Error as e:
                outcome.append(str(e))
        threads = []
        def objective(trial):
            trial.report(0.5, 0)
            t = threading.Thread(target=keep_reporting, args=(trial,))
            t.start()
            threads.append(t)
            return 0.5
        paratune.tune(objective, {"lr": {"type": "float", "low": 0.001, "high": 1.0}}, storage="s.db",
                      max_trials=20, sampler="random", pruner="none")
        for t in threads:
            t.join()
        print(len(outcome), all("the trial has ended" in text for text in outcome))
    """, tmp_path)
    assert out.splitlines() == ["20 True"]


def test_the_trial_that_reads_the_space_cannot_be_used_after_its_call(tmp_path):
    out = run_python(r"""
        kept = []
        def objective(trial):
            kept.append(trial)
            return trial.suggest_float("lr", 0.001, 1.0)
        paratune.tune(objective, storage="s.db", max_trials=2, pruner="none")
        print(repr(kept[0]))
        for call in (lambda t: t.report(1.0, 10), lambda t: t.suggest_float("lr", 0.001, 1.0)):
            try:
                call(kept[0])
                print("no error")
            except BaseException as e:
                print(type(e).__name__ + ":", e)
    """, tmp_path)
    assert out.splitlines() == [
        "<paratune.Trial 0 (the call that reads the space) {\"lr\":0.5005}>",
        "Error: report: the call that read the space has ended; use a trial only inside the objective call it was "
        "given to",
        "Error: suggest_float: the call that read the space has ended; use a trial only inside the objective call "
        "it was given to",
    ]


def test_results_outlive_what_made_them(tmp_path):
    # Every result holds what it needs by value or shares it: nothing is borrowed from a parent object.
    out = run_python(r"""
        result = paratune.plan("llama3-8b", "dgx-h100:1", 4096, 64, top=2)
        best, plans = result.best, result.plans
        estimate = best.estimate
        del result
        gc.collect()
        print(best.config == plans[0].config, estimate.fits, paratune.launch_args(best, "megatron").text != "")
        sim = paratune.simulate("llama3-8b", "dgx-h100:1", best.config, 4096, 64)
        events = sim.events
        trace = sim.chrome_trace()
        print(len(events) > 0, sim.to_html().startswith("<!DOCTYPE html>"))
        study = paratune.tune(lambda t: t.suggest_float("lr"), {"lr": {"type": "float", "low": 0.1, "high": 1.0}},
                              storage="s.db", max_trials=2, pruner="none")
        trial, trials = study.best, study.trials
        del study
        gc.collect()
        print(trial.number in (1, 2), [t.status for t in trials], paratune.open_study("s.db").to_html() != "")
    """, tmp_path)
    assert out.splitlines() == ["True True True", "True True", "True ['completed', 'completed'] True"]
