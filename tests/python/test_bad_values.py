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


class Unprintable:
    def __str__(self):
        raise RuntimeError("no str")

    def __repr__(self):
        raise RuntimeError("no repr")


NOT_UTF8 = r"has characters UTF-8 cannot hold \(a lone surrogate such as \\udc80"


def unreadable_texts(tmp_path):
    m, c = "llama3-8b", "dgx-h100:1"
    yield "config", lambda: paratune.estimate(m, c, "dp=8\udc80", 4096, 64), rf"^config: 'dp=8\\udc80': {NOT_UTF8}"
    yield "config dict", lambda: paratune.estimate(m, c, {"dp": Unprintable()}, 4096, 64), \
        r"^config: dp: a Unprintable whose str\(\) raised RuntimeError: no str$"
    yield "precision", lambda: paratune.estimate(m, c, "dp=8", 4096, 64, precision="\udc80"), \
        rf"^precision: '\\udc80': {NOT_UTF8}"
    yield "memory_margin", lambda: paratune.estimate(m, c, "dp=8", 4096, 64, memory_margin=Unprintable()), \
        r"memory_margin = <a Unprintable>: must be a number"
    yield "fix", lambda: paratune.plan(m, c, 4096, 64, fix={"tp": "\udc80"}), rf"^fix: '\\udc80': {NOT_UTF8}"
    yield "model", lambda: paratune.load_model({"name": "\udc80"}), rf"^model: {NOT_UTF8}"
    yield "open_study", lambda: paratune.open_study(str(tmp_path / "\udc80.db")), \
        rf"^storage: '.*\\udc80.db': {NOT_UTF8}"
    yield "tune.space", lambda: paratune.tune(lambda t: 1.0, {"\udc80": [1, 2]}, storage=tmp_path / "s.db"), \
        rf"^space: {NOT_UTF8}"
    yield "tune.sampler_options", lambda: paratune.tune(lambda t: 1.0, {"x": [1, 2]}, storage=tmp_path / "s.db",
                                                        sampler_options={Unprintable(): 1}), \
        r"^sampler_options: a Unprintable whose str\(\) raised RuntimeError: no str$"


def test_text_that_cannot_be_read_is_an_error_naming_the_argument(tmp_path):
    # A lone surrogate (os.fsdecode's way with bytes that are not UTF-8) or an object whose str() raises raised
    # an unrelated RuntimeError ("Unable to cast Python instance to C++ type").
    for name, call, message in unreadable_texts(tmp_path):
        with pytest.raises(paratune.Error, match=message):
            call()
