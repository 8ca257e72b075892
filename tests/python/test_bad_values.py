"""Wrong types and values in every argument: a Python exception each time, never a crash of the interpreter."""

import math

import pytest

import paratune

BAD = [None, 3, -1, 2**70, 1.5, math.nan, "", "no-such-thing", b"bytes", [], [1, "x"], {}, {"x": {"y": []}},
       {1: 2}, object(), paratune]


def calls():
    m, c = "llama3-8b", "dgx-h100:1"
    yield "load_model", lambda v: paratune.load_model(v)
    yield "load_cluster", lambda v: paratune.load_cluster(v)
    yield "estimate.config", lambda v: paratune.estimate(m, c, v, 4096, 64)
    yield "estimate.seq_len", lambda v: paratune.estimate(m, c, "dp=8", v, 64)
    yield "estimate.precision", lambda v: paratune.estimate(m, c, "dp=8", 4096, 64, precision=v)
    yield "estimate.memory_margin", lambda v: paratune.estimate(m, c, "dp=8", 4096, 64, memory_margin=v)
    yield "estimate.calibration", lambda v: paratune.estimate(m, c, "dp=8", 4096, 64, calibration=v)
    yield "plan.fix", lambda v: paratune.plan(m, c, 4096, 64, fix=v, top=1)
    yield "plan.threads", lambda v: paratune.plan(m, c, 4096, 64, threads=v, top=1)
    yield "simulate.schedule", lambda v: paratune.simulate(m, c, "dp=2,pp=4", 4096, 64, schedule=v)
    yield "launch_args.plan", lambda v: paratune.launch_args(v, "megatron")
    yield "open_study", lambda v: paratune.open_study(v)
    yield "tune.space", lambda v: paratune.tune(lambda t: 1.0, v, storage="/nonexistent/dir/s.db", max_trials=1)
    yield "tune.objective", lambda v: paratune.tune(v, {"x": [1, 2]}, storage="/nonexistent/dir/s.db", max_trials=1)


@pytest.mark.parametrize("name,call", list(calls()), ids=[n for n, _ in calls()])
def test_every_bad_value_is_an_exception(name, call):
    for value in BAD:
        try:
            call(value)
        except (paratune.Error, TypeError, ValueError, OSError, RuntimeError, OverflowError):
            pass  # what a caller can catch; anything else (or a crash) fails the test
