"""create_study / load_study: Optuna's Study, Trial and FrozenTrial, on paratune's engine.

Everything that decides (samplers, pruners, what is stored and how a study resumes) is the engine's:
``paratune._core._Engine`` (python/src/define_by_run.cc) over hpo/ask_tell.h, the same as ``tune()``
and ``paratune tune`` use. This file only gives it Optuna's shape: the objective loop of ``optimize``
(threads, timeout, callbacks, catch), ``ask``/``tell``, and the trials as FrozenTrial objects.

The space is defined by the run: a parameter may be suggested in a branch, with bounds that depend
on earlier values; the engine's study grows as the trials reveal it (hpo/ask_tell.h, "Define-by-run").
"""

import datetime as _datetime
import enum as _enum
import gc as _gc
import json as _json
import logging as _logging
import math as _math
import numbers as _numbers
import os as _os
import re as _re
import threading as _threading
import time as _time
import uuid as _uuid
import warnings as _warnings

from . import distributions as _distributions
from . import exceptions as _exceptions
from . import pruners as _pruners
from . import samplers as _samplers
from ._core import Error, _Engine
from ._core import _copy_study, _delete_study
from ._core import open_study as _open_study
from ._core import studies as _studies
from .study import StudyDirection
from .trial import TrialState

_logger = _logging.getLogger("paratune")


def _state_of(status):
    """The stored status (completed, pruned, failed, oom, interrupted, ...) as a TrialState."""
    return {"running": TrialState.RUNNING, "completed": TrialState.COMPLETE,
            "pruned": TrialState.PRUNED}.get(status, TrialState.FAIL)


def _is_pruned(exception):
    """paratune.TrialPruned, or any exception class named TrialPruned in its MRO: optuna.TrialPruned
    (optuna.exceptions.TrialPruned) raised by ported code, without Optuna installed."""
    return any(cls.__name__ == "TrialPruned" for cls in type(exception).__mro__)


def _is_out_of_memory(exception):
    """MemoryError, or an exception class named *OutOfMemoryError (torch.cuda.OutOfMemoryError)."""
    return isinstance(exception, MemoryError) or type(exception).__name__.endswith("OutOfMemoryError")


def _exception_text(exception):
    text = f"{type(exception).__name__}: {exception}" if str(exception) else type(exception).__name__
    text = text.replace("\n", " ")
    return text if len(text) <= 500 else text[:497] + "..."


# Categorical choices: None, bools, ints (anything with __index__), floats and strings are stored as
# they are -- numpy's scalars and other subclasses as the plain type; any other hashable (a tuple, an
# enum member) under its repr(). The objective gets back the very object it listed. (tune()'s trials:
# python/src/tuning.cc stored_choices, the same rule.)
def _stored_choice(choice):
    if isinstance(choice, int) and not isinstance(choice, bool) and not -2**63 <= choice < 2**63:
        return repr(choice)  # beyond a 64-bit integer, which the store's JSON numbers hold
    if choice is None or type(choice) in (bool, str, float, int):
        return choice
    if isinstance(choice, _enum.Enum):
        return repr(choice)  # before str and int: a str- or int-valued member is not its value
    kind = getattr(getattr(choice, "dtype", None), "kind", None)  # a numpy scalar
    if kind == "b":
        return bool(choice)
    if isinstance(choice, _numbers.Integral):
        return int(choice)
    if isinstance(choice, float) or kind == "f":
        return float(choice)
    if isinstance(choice, str):
        return str(choice)
    return repr(choice)


def _choice_key(stored):
    """A stored choice as a dict key that keeps True, 1 and 1.0 apart."""
    return type(stored).__name__, stored


def _real(value):
    """A number given as a Python, numpy or torch scalar, as a float; None when it is not one (a bool, a
    text, or a tensor of several elements is not)."""
    if isinstance(value, (bool, str, bytes)) or not hasattr(value, "__float__"):
        return None
    try:
        return float(value)
    except Exception:  # noqa: BLE001 -- whatever __float__ raises (torch: RuntimeError), it is not a number
        return None


def _same_stored(a, b):
    """JSON equality that keeps True apart from 1 and 1 apart from 1.0, as the stored values differ."""
    return _choice_key(a) == _choice_key(b)


class FrozenTrial:
    """A trial as stored (Optuna's FrozenTrial): number (from 0, as Optuna's), state, value (values with
    several objectives), params, distributions, user_attrs, intermediate_values, datetime_start,
    datetime_complete; and paratune's status and reason. ``value`` is None unless the trial
    completed. ``_trial_id`` is the number paratune's reports and command line show (number + 1)."""

    def __init__(self, stored, originals=None):
        self._trial_id = stored["number"]
        self.number = self._trial_id - 1
        self.status = stored["status"]
        self.reason = stored["reason"]
        self.state = _state_of(self.status)
        complete = self.state == TrialState.COMPLETE
        self._many = "values" in stored  # a study of several objectives
        self._values = stored["values"] if self._many and complete else None
        self._value = stored["value"] if complete and not self._many else None
        if self.state == TrialState.PRUNED and not self._many and stored["intermediate_values"]:
            # Optuna's: a pruned trial's value is its last report.
            self._value = stored["intermediate_values"][max(stored["intermediate_values"])]
        # A categorical value listed in this process is the very object listed (a tuple, an enum member);
        # else its stored form.
        originals = originals or {}
        self.params = {name: originals.get(name, {}).get(_choice_key(value), value) if _hashable(value) else value
                       for name, value in stored["params"].items()}
        # paratune.distributions' classes (Optuna's), their choices the objects listed in this process.
        self.distributions = {name: _distributions._from_stored(d, originals.get(name))
                              for name, d in stored["distributions"].items()}
        self.user_attrs = stored["user_attrs"]
        self.system_attrs = {}  # Optuna's internal attributes: paratune has none
        # A study of several objectives has no learning curve (its stored metrics are the values).
        self.intermediate_values = {} if self._many else dict(stored["intermediate_values"])
        self.datetime_start = _datetime.datetime.fromtimestamp(stored["started_unix_s"])
        ended = stored["ended_unix_s"]
        self.datetime_complete = None if ended is None else _datetime.datetime.fromtimestamp(ended)

    @property
    def trial_id(self):
        """The number paratune's reports and command line show for this trial (number + 1)."""
        return self._trial_id

    @property
    def value(self):
        """The value of a completed trial (of a pruned one, its last report, as in Optuna), else None;
        RuntimeError in a study of several objectives
        (as in Optuna: use values)."""
        if self._many:
            raise RuntimeError(f"trial {self.number}: value: the study has several objectives; use values")
        return self._value

    @property
    def values(self):
        """Each objective's value of a completed trial, in the study's order ([value] with one
        objective), or None."""
        if self._many:
            return None if self._values is None else list(self._values)
        return None if self._value is None else [self._value]

    @property
    def duration(self):
        """datetime_complete - datetime_start, or None while it runs."""
        return None if self.datetime_complete is None else self.datetime_complete - self.datetime_start

    @property
    def last_step(self):
        """The last step reported, or None."""
        return max(self.intermediate_values) if self.intermediate_values else None

    # As Optuna's FrozenTrial, a stored trial can be given to the objective again
    # (objective(study.best_trial)): each suggest_* returns the value it had, the rest does nothing.
    def _stored_param(self, name):
        if name not in self.params:
            raise Error(f"trial {self.number}: the value of the parameter '{name}' is not found (it did not ask for it)")
        return self.params[name]

    def suggest_float(self, name, low, high, *, step=None, log=False):
        """suggest_float(self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False) -> float

        The value the trial had (Optuna's FrozenTrial)."""
        del low, high, step, log
        return self._stored_param(name)

    def suggest_int(self, name, low, high, step=1, log=False):
        """suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int

        The value the trial had (Optuna's FrozenTrial)."""
        del low, high, step, log
        return self._stored_param(name)

    def suggest_categorical(self, name, choices):
        """suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any

        The value the trial had (Optuna's FrozenTrial)."""
        del choices
        return self._stored_param(name)

    def report(self, value, step):
        """report(self, value: float, step: int) -> None

        Nothing: the trial has ended (Optuna's FrozenTrial)."""
        del value, step

    def should_prune(self):
        """should_prune(self) -> bool

        False: the trial has ended (Optuna's FrozenTrial)."""
        return False

    def set_user_attr(self, key, value):
        """set_user_attr(self, key: str, value: Any) -> None

        Kept on this object only (Optuna's FrozenTrial)."""
        self.user_attrs[key] = value

    def _compared(self):
        return (self._trial_id, self.state, self._value, self._values, self.params, self.user_attrs,
                self.intermediate_values, self.datetime_start, self.datetime_complete)

    def __eq__(self, other):
        if not isinstance(other, FrozenTrial):
            return NotImplemented
        return self._compared() == other._compared()

    def __lt__(self, other):
        if not isinstance(other, FrozenTrial):
            return NotImplemented
        return self.number < other.number

    def __hash__(self):
        return hash((self._trial_id, self.state))

    def __repr__(self):
        shown = f"values={self._values!r}" if self._many else f"value={self._value!r}"
        return f"<paratune.FrozenTrial {self.number} {self.state.name} {shown} params={self.params!r}>"


def _renumbered(error, trial_id, number):
    """The engine's Error about trial `trial_id` (its number from 1) with the trial's Optuna number instead."""
    return Error(_re.sub(rf"\btrial {trial_id}\b", f"trial {number}", str(error)))


def _plain(value):
    """A user attribute as JSON can store it: numpy and torch scalars and arrays as Python numbers and lists
    (Optuna's storages take them), containers element by element; anything else as it is (the engine says
    what it cannot store)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if not isinstance(value, (str, bytes, bool, int, float)) and value is not None:
        if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
            try:
                return _plain(value.tolist())
            except Exception:  # noqa: BLE001 -- not an array after all: the engine says what it is
                return value
    return value


def _same_params(a, b):
    """Whether two trials' parameters (stored forms) are the same, True apart from 1 and 1.0."""
    return a.keys() == b.keys() and all(_same_stored(a[k], b[k]) for k in a)


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


class LiveTrial:
    """A running trial of a LiveStudy (Optuna's Trial): its objective calls ``suggest_*`` to get its
    parameters (defined by the run: in branches, with bounds that depend on earlier values),
    ``report`` and ``should_prune``. Once told (by optimize, or study.tell), every call raises
    paratune.Error; number, params and user_attrs stay readable."""

    def __init__(self, study, trial_id):
        self.study = study
        self._trial_id = trial_id  # the engine's (and the store's) number: from 1
        self.number = trial_id - 1  # Optuna's: from 0
        self.params = {}  # as suggested so far: the objects given to the objective
        self.user_attrs = {}
        self.datetime_start = _datetime.datetime.now()
        self._finished = False
        self._diverged = False  # a report was not a finite number: should_prune() then stops the trial
        self._intermediate = {}  # the reports the study kept, for the FrozenTrial tell() gives back

    @property
    def trial_id(self):
        """The number paratune's reports and command line show for this trial (number + 1)."""
        return self._trial_id

    def _engine(self, call):
        if self._finished:
            raise Error(f"trial {self.number}: {call}: the trial has ended (it was told how it ended); use a trial "
                        "only until then")
        return self.study._engine

    def _call(self, call, method, *args):
        """engine.method(this trial, *args); the engine's errors name the trial by its Optuna number."""
        engine = self._engine(call)
        try:
            return getattr(engine, method)(self._trial_id, *args)
        except Error as e:
            raise _renumbered(e, self._trial_id, self.number) from None

    def _suggest(self, call, name, kind, low, high, step, log, choices):
        if not isinstance(name, str) or not name:
            raise Error(f"{call}: name {name!r}: must be a non-empty str")
        return self._call(call, "suggest", name, kind, low, high, step, log, choices, call)

    @staticmethod
    def _number(call, what, value, integral):
        if isinstance(value, bool) or not isinstance(value, _numbers.Real) or (
                integral and not float(value).is_integer()):
            rule = "a whole number" if integral else "a number"
            raise Error(f"{call}: {what} {value!r}: must be {rule}")
        return float(value)

    def suggest_float(self, name, low, high, *, step=None, log=False):
        """suggest_float(self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False) -> float

        A float from low to high: uniform, in log space with log=True, on low, low + step, ... with
        step (high moves down onto that grid, as in Optuna; step and log cannot be used together)."""
        call = f"suggest_float('{name}')"
        low = self._number(call, "low", low, False)
        high = self._number(call, "high", high, False)
        if step is not None:
            step = self._number(call, "step", step, False)
            if not step > 0:
                raise Error(f"{call}: step {step}: must be a positive number, or None")
        step = 0.0 if step is None else step
        return self._keep(name, float(self._suggest(call, name, "float", low, high, step, bool(log), None)))

    def suggest_int(self, name, low, high, step=1, log=False):
        """suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int

        An int from low to high (both included): uniform, in log space with log=True, on low, low +
        step, ... with step (step > 1 and log cannot be used together)."""
        call = f"suggest_int('{name}')"
        low = self._number(call, "low", low, True)
        high = self._number(call, "high", high, True)
        step = self._number(call, "step", step, True)
        if step < 1:
            raise Error(f"{call}: step {int(step)}: must be 1 or more")
        return self._keep(name, int(self._suggest(call, name, "int", low, high, step, bool(log), None)))

    def suggest_categorical(self, name, choices):
        """suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any

        One of choices: None, bools, numbers, strings or any other hashable (a tuple); the very object
        listed is given back (stored as itself, or as its repr() when it is not None, a bool, a number
        or a str)."""
        call = f"suggest_categorical('{name}')"
        if isinstance(choices, (str, bytes)) or not hasattr(choices, "__iter__"):
            raise Error(f"{call}: choices {choices!r}: must be a sequence of values (a list or a tuple)")
        choices = list(choices)
        stored = [_stored_choice(c) for c in choices]
        repeated = _distributions._repeated_choice(choices)
        if repeated is not None:
            raise Error(f"{call}: choices {choices!r}: {choices[repeated]!r} is listed twice (or two choices have "
                        "the same repr())")
        value = self._suggest(call, name, "categorical", 0.0, 0.0, 0.0, False, stored)
        if name in self.params:
            return self.params[name]  # asked again: what it got the first time, as the engine says
        originals = self.study._originals.setdefault(name, {})
        for c, s in zip(choices, stored):
            originals.setdefault(_choice_key(s), c)  # the study's trials show these objects as their params
        return self._keep(name, next(c for c, s in zip(choices, stored) if _same_stored(s, value)))

    # Optuna 3's deprecated forms, as it still has them.
    def suggest_uniform(self, name, low, high):
        """suggest_uniform(self, name: str, low: float, high: float) -> float

        suggest_float(name, low, high) (Optuna's deprecated form)."""
        return self.suggest_float(name, low, high)

    def suggest_loguniform(self, name, low, high):
        """suggest_loguniform(self, name: str, low: float, high: float) -> float

        suggest_float(name, low, high, log=True) (Optuna's deprecated form)."""
        return self.suggest_float(name, low, high, log=True)

    def suggest_discrete_uniform(self, name, low, high, q):
        """suggest_discrete_uniform(self, name: str, low: float, high: float, q: float) -> float

        suggest_float(name, low, high, step=q) (Optuna's deprecated form)."""
        return self.suggest_float(name, low, high, step=q)

    def _keep(self, name, value):
        """The value given for `name`: the first one, when it is asked again (Optuna's rule)."""
        return self.params.setdefault(name, value)

    def report(self, value, step):
        """report(self, value: float, step: int) -> None

        The objective's value after a step (0-based): its learning curve, which the pruner judges. Steps
        may come in any order; a step reported again is ignored with a UserWarning, as Optuna does. A value
        that is not a finite number (a diverged run) is not stored: it is warned of, and should_prune() then
        stops the trial at once under any pruner but 'none' (paratune's rule; Optuna's median pruner stops
        a trial whose reports are all NaN, after its startup trials)."""
        engine = self._engine("report")
        step = int(self._number("report", "step", step, True))
        if not 0 <= step < 2**62:
            raise Error(f"trial {self.number}: report: step {step} must be >= 0 (and below 2**62)")
        reported = _real(value)
        if reported is None:
            raise Error(f"report: value {value!r}: must be a number")
        if not _math.isfinite(reported):
            self._diverged = True
            stops = "the trial's pruner stops it" if engine.pruner != "none" else "no pruner stops the trial"
            _warnings.warn(f"trial {self.number}: report: value {reported} at step {step} is not a finite number; "
                           f"not stored, and {stops}", UserWarning, stacklevel=2)
        elif self._call("report", "report", step, reported):
            self._intermediate[step] = reported
        else:
            _warnings.warn(f"trial {self.number}: report: step {step} was reported already; the value {reported} is "
                           "ignored", UserWarning, stacklevel=2)

    def report_metric(self, name, value, step=None):
        """report_metric(self, name: str, value: float, step: int | None = None) -> None

        Another metric, stored with the trial (not judged)."""
        self._engine("report_metric")
        reported = _real(value)
        if reported is None:
            raise Error(f"report_metric('{name}'): value {value!r}: must be a number")
        if not _math.isfinite(reported):
            _warnings.warn(f"trial {self.number}: report_metric('{name}'): value {reported} is not a finite number; "
                           "not stored", UserWarning, stacklevel=2)
            return
        step = None if step is None else int(self._number("report_metric", "step", step, True))
        self._call("report_metric", "report_metric", name, reported, step)

    def should_prune(self):
        """should_prune(self) -> bool

        Whether the pruner stops the trial now; then raise paratune.TrialPruned."""
        if self._diverged and self._engine("should_prune").pruner != "none":
            return True
        return self._call("should_prune", "should_prune")

    def set_user_attr(self, key, value):
        """set_user_attr(self, key: str, value: Any) -> None

        A JSON-serializable value kept with the trial (FrozenTrial.user_attrs); numpy's and torch's numbers
        and arrays are stored as Python numbers and lists."""
        if not isinstance(key, str):
            raise Error(f"set_user_attr: key {key!r}: must be a str")
        self._call("set_user_attr", "set_user_attr", key, _plain(value))
        self.user_attrs[key] = value

    def __repr__(self):
        ended = " (ended)" if self._finished else ""
        return f"<paratune.LiveTrial {self.number} {_json.dumps(self.params, default=repr)}{ended}>"


class LiveStudy:
    """A study open for trials (Optuna's Study), from create_study or load_study: ``optimize``, or
    ``ask`` and ``tell``; ``trials``, ``best_trial``, ``best_params``, ``best_value``,
    ``trials_dataframe``. Its trials are stored as they end; ``paratune.open_study`` reads the same
    study, and ``paratune report`` / the dashboard show it."""

    def __init__(self, engine, storage):
        self._engine = engine
        self._storage = storage  # where to open it again: the unmasked URL, or an in-memory study's file
        self._user_attrs = {}
        self._stop = _threading.Event()
        self._best_lock = _threading.Lock()
        self._best = None  # (number, value) of the best completed trial told here, for the log lines
        self._queued = []  # every enqueue_trial's params (stored form), for skip_if_exists
        self._originals = {}  # name -> {stored choice key: the object listed}: params show the objects

    @property
    def study_name(self):
        """The study's name in its storage."""
        return self._engine.name

    @property
    def direction(self):
        """StudyDirection.MINIMIZE or MAXIMIZE (also the text 'minimize' or 'maximize'); RuntimeError in a
        study of several objectives (as in Optuna: use directions)."""
        if self._many():
            raise RuntimeError(f"study '{self.study_name}': direction: the study has several objectives; use "
                               "directions")
        return StudyDirection(self._engine.direction)

    @property
    def directions(self):
        """Each objective's direction (StudyDirection), in order (one for one objective)."""
        return [StudyDirection(d) for d in self._engine.directions]

    def _many(self):
        return len(self._engine.directions) > 1

    def _single(self, what):
        """RuntimeError for `what` (best_trial, ...) in a study of several objectives, as in Optuna."""
        if self._many():
            raise RuntimeError(f"study '{self.study_name}': {what}: a study of several objectives has no single best "
                               "trial; use best_trials (the Pareto front)")

    @property
    def storage(self):
        """Where the study is stored (a PostgreSQL password masked; a temporary file for in-memory)."""
        return self._engine.locator

    @property
    def user_attrs(self):
        """The study's user attributes (kept in memory, with this object)."""
        return dict(self._user_attrs)

    def set_user_attr(self, key, value):
        """set_user_attr(self, key: str, value: Any) -> None

        A value kept with this study object (not stored: Optuna stores it)."""
        if not isinstance(key, str):
            raise Error(f"set_user_attr: key {key!r}: must be a str")
        self._user_attrs[key] = value

    @property
    def trials(self):
        """Every trial as stored, in number order (FrozenTrial)."""
        return [FrozenTrial(t, self._originals) for t in self._engine.trials()]

    def get_trials(self, deepcopy=True, states=None):
        """get_trials(self, deepcopy: bool = True, states: Sequence[TrialState] | None = None) -> list[FrozenTrial]

        The trials, only those in `states` when given (paratune's TrialState or Optuna's; deepcopy is
        accepted for Optuna's signature: every call reads them afresh)."""
        del deepcopy
        trials = self.trials
        return trials if states is None else [t for t in trials if t.state in tuple(states)]

    @property
    def best_trial(self):
        """The best completed trial (the earlier on a tie); paratune.Error when none has completed;
        RuntimeError in a study of several objectives."""
        self._single("best_trial")
        completed = [t for t in self.trials if t.state == TrialState.COMPLETE and t.value is not None]
        if not completed:
            raise Error(f"study '{self.study_name}': best_trial: no trial has completed yet")
        sign = 1 if self.direction == "minimize" else -1
        return min(completed, key=lambda t: (sign * t.value, t.number))

    @property
    def best_params(self):
        """best_trial.params."""
        self._single("best_params")
        return self.best_trial.params

    @property
    def best_value(self):
        """best_trial.value."""
        self._single("best_value")
        return self.best_trial.value

    @property
    def best_trials(self):
        """The trials of the Pareto front (none dominated by another completed trial), in number order
        (Optuna's best_trials); with one objective, the best trials (those tied best)."""
        if not self._many():
            completed = [t for t in self.trials if t.state == TrialState.COMPLETE and t.value is not None]
            best = min((t.value if self.direction == "minimize" else -t.value for t in completed), default=None)
            return [t for t in completed if (t.value if self.direction == "minimize" else -t.value) == best]
        front = set(self._engine.front())
        return [t for t in self.trials if t._trial_id in front]

    def enqueue_trial(self, params, user_attrs=None, skip_if_exists=False):
        """enqueue_trial(self, params: Mapping[str, Any], user_attrs: Mapping[str, Any] | None = None, skip_if_exists: bool = False) -> None

        The next trial asked takes these values for the parameters it suggests (each where it fits the
        distribution asked for; else it is drawn as usual), and these user attributes. Queued with this
        study object (Optuna stores the queue); skip_if_exists: not queued when a trial has these params."""
        if not hasattr(params, "items"):
            raise Error(f"enqueue_trial: params {params!r}: must be a dict of parameter values")
        stored = {str(k): _stored_choice(v) for k, v in params.items()}
        if skip_if_exists and any(_same_params(stored, other) for other in
                                  self._queued + [t["params"] for t in self._engine.trials()]):
            return
        self._engine.enqueue(stored, _plain(dict(user_attrs or {})))
        self._queued.append(stored)

    def add_trial(self, trial):
        """add_trial(self, trial: FrozenTrial) -> None

        A finished trial (from paratune.trial.create_trial, or another study's FrozenTrial) stored in this
        study as its next trial, which the sampler and pruner then count like any other (Optuna's add_trial:
        warm-starting a search from known results). It runs as a trial asked, suggested, reported and told
        here: its parameters, their distributions, user attributes, intermediate values and value(s) or state
        (COMPLETE, PRUNED or FAIL) are the given ones; its number and times are this study's."""
        if not isinstance(trial, FrozenTrial):
            raise Error(f"add_trial: trial {trial!r}: must be a FrozenTrial (paratune.trial.create_trial makes one)")
        if not trial.state.is_finished():
            raise Error(f"add_trial: trial {trial.number}: state {trial.state.name}: paratune adds finished trials "
                        "only (COMPLETE, PRUNED or FAIL)")
        distributions = {n: _distributions._from_stored(d) for n, d in trial.distributions.items()}
        _distributions._check_params(f"add_trial: trial {trial.number}", trial.params, distributions)
        values = trial.values if trial.state == TrialState.COMPLETE else None
        if values is not None and len(values) != len(self.directions):
            raise Error(f"add_trial: trial {trial.number}: {len(values)} values {values!r}; this study has "
                        f"{len(self.directions)} objective(s)")
        for name in distributions:
            if not isinstance(name, str) or not name:
                raise Error(f"add_trial: trial {trial.number}: parameter name {name!r}: must be a non-empty str")
        # Reports are one objective's learning curve: a study of several has none.
        reports = {} if self._many() else trial.intermediate_values
        for step in reports:
            if isinstance(step, bool) or not isinstance(step, _numbers.Integral) or not 0 <= step < 2**62:
                raise Error(f"add_trial: trial {trial.number}: intermediate_values step {step!r}: must be a whole "
                            "number from 0 to 2**62 - 1")
        # The very next trial takes these values, ahead of anything enqueue_trial queued.
        live = LiveTrial(self, self._engine.ask({n: _stored_choice(v) for n, v in trial.params.items()},
                                                _plain(dict(trial.user_attrs))))
        live.user_attrs = dict(self._engine.user_attrs(live._trial_id))
        try:
            for name, d in distributions.items():
                if isinstance(d, _distributions.FloatDistribution):
                    got = live.suggest_float(name, d.low, d.high, step=d.step, log=d.log)
                elif isinstance(d, _distributions.IntDistribution):
                    got = live.suggest_int(name, d.low, d.high, step=d.step, log=d.log)
                else:
                    got = live.suggest_categorical(name, d.choices)
                wanted = trial.params[name]
                taken = (float(got) == float(wanted) if not isinstance(d, _distributions.CategoricalDistribution)
                         else _same_stored(_stored_choice(got), _stored_choice(wanted)))
                if not taken:
                    raise Error(f"add_trial: params['{name}'] {wanted!r} was not taken (the study asked {got!r} of "
                                f"{d!r})")
            for step in sorted(reports):
                live.report(reports[step], step)
        except BaseException as e:
            # Never left running: stored as failed, saying why, and the error raised.
            self._fail(live, f"add_trial: {e}")
            raise
        if values is not None:
            self.tell(live, values=values if self._many() else values[0])
        elif trial.state == TrialState.FAIL and trial.reason:
            self._fail(live, trial.reason)  # why it failed, as the trial it comes from says
        else:
            self.tell(live, state=trial.state)

    def _fail(self, live, reason):
        """Ends the asked trial `live` as failed, for `reason`."""
        self._engine.tell(live._trial_id, "fail", None, reason, [])
        live._finished = True

    def add_trials(self, trials):
        """add_trials(self, trials: Iterable[FrozenTrial]) -> None

        add_trial for each, in order."""
        for trial in trials:
            self.add_trial(trial)

    def stop(self):
        """stop(self) -> None

        Ends optimize() once the running trials end (from a callback or an objective, as in Optuna)."""
        self._stop.set()

    def ask(self):
        """ask(self) -> LiveTrial

        A new running trial; end it with tell(). An enqueued trial has the queue's user attributes."""
        trial = LiveTrial(self, self._engine.ask())
        trial.user_attrs = dict(self._engine.user_attrs(trial._trial_id))
        return trial

    def tell(self, trial, values=None, state=None, skip_if_finished=False):
        """tell(self, trial: LiveTrial | int, values: float | Sequence[float] | None = None, state: TrialState | str | None = None, skip_if_finished: bool = False) -> FrozenTrial

        How an asked trial ended: a value (state COMPLETE, the default when a value is given), or
        state PRUNED or FAIL (no value needed: a pruned trial keeps its last report). Values that do not
        fit the study (the wrong count, or not finite) fail the trial with a UserWarning, as in Optuna."""
        if isinstance(trial, LiveTrial):
            number = trial._trial_id
        elif _whole(trial) is None:
            raise Error(f"tell: trial {trial!r}: must be a trial from ask() or its number")
        else:
            number = _whole(trial) + 1  # Optuna's number, from 0: the engine's from 1
        value, floats, reason = None, [], ""
        if self._many():
            if values is not None and not isinstance(values, (list, tuple)):
                raise Error(f"tell: values {values!r}: this study has {len(self.directions)} objectives, so a list "
                            "of one value each")
            state = _told_state(state, values)
            if state == "complete":
                floats, reason = _floats(values)
        else:
            if isinstance(values, (list, tuple)):
                if len(values) == 1:
                    values = values[0]
                else:
                    reason, values, state = f"told {len(values)} values {values!r}; this study has one objective", \
                        None, "fail"
            state = _told_state(state, values)
            if values is not None:
                value = _real(values)
                if value is None:
                    raise Error(f"tell: values {values!r}: must be a number")
        if skip_if_finished and number not in {t._trial_id for t in self.trials if t.state == TrialState.RUNNING}:
            return self._frozen(number)
        try:
            stored = self._engine.tell(number, "fail" if reason else state, value, reason, floats)
        except Error as e:
            raise _renumbered(e, number, number - 1) from None
        if state == "complete" and stored["status"] != "completed" or reason:
            _warnings.warn(f"trial {number - 1}: tell: {stored['reason']}; the trial failed", UserWarning, stacklevel=2)
        if not isinstance(trial, LiveTrial):
            return self._frozen(number)  # its curve is in the store only
        return self._told(trial, stored)

    def _told(self, trial, stored):
        """The trial as just stored, its curve from what it reported."""
        trial._finished = True
        stored["intermediate_values"] = trial._intermediate
        return FrozenTrial(stored, self._originals)

    def _frozen(self, trial_id):
        found = [t for t in self.trials if t._trial_id == trial_id]
        if not found:
            raise Error(f"study '{self.study_name}': trial {trial_id - 1}: no such trial")
        return found[0]

    def optimize(self, func, n_trials=None, timeout=None, n_jobs=1, catch=(), callbacks=None,
                 gc_after_trial=False, show_progress_bar=False):
        """optimize(self, func: Callable[[LiveTrial], float | None], n_trials: int | None = None, timeout: float | None = None, n_jobs: int = 1, catch: Iterable[type[Exception]] | type[Exception] = (), callbacks: Sequence[Callable[[LiveStudy, FrozenTrial], None]] | None = None, gc_after_trial: bool = False, show_progress_bar: bool = False) -> None

        Runs trials of func(trial) until n_trials more have run, timeout seconds have passed, stop() is
        called, or Ctrl-C. How a call ends decides the trial's state, as in Optuna: a number -- complete
        (None: its last report); TrialPruned (any class of that name) -- pruned; an exception of a class in
        `catch` -- failed, and the study goes on; any other exception -- failed, and optimize() raises it.
        Each callback gets (study, frozen_trial) after each trial. n_jobs threads call func at once (-1: one
        per CPU). show_progress_bar: each trial is logged on the 'paratune' logger instead."""
        del show_progress_bar  # the per-trial log lines are the progress
        n_trials = _checked_count("n_trials", n_trials)
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, _numbers.Real)
                                    or not timeout >= 0 or not _math.isfinite(timeout)):
            raise Error(f"optimize: timeout {timeout!r}: must be a finite number of seconds >= 0, or None")
        if n_jobs == -1:
            n_jobs = _os.cpu_count() or 1
        n_jobs = _as_int(n_jobs)
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not 1 <= n_jobs <= 256:
            raise Error(f"optimize: n_jobs {n_jobs!r}: must be from 1 to 256, or -1 (one per CPU)")
        catch = (catch,) if isinstance(catch, type) else tuple(catch)
        if not all(isinstance(c, type) and issubclass(c, BaseException) for c in catch):
            raise Error(f"optimize: catch {catch!r}: must be exception classes")
        callbacks = list(callbacks or ())
        start = _time.monotonic()
        lock = _threading.Lock()
        started = 0
        failure = []  # the first exception optimize() re-raises
        self._stop.clear()

        def may_start():
            nonlocal started
            with lock:
                if failure or self._stop.is_set():
                    return False
                if n_trials is not None and started >= n_trials:
                    return False
                if timeout is not None and _time.monotonic() - start >= timeout:
                    return False
                started += 1
                return True

        def worker():
            while may_start():
                try:
                    frozen = self._run_trial(func, catch)
                    for callback in callbacks:
                        callback(self, frozen)
                    if gc_after_trial:
                        _gc.collect()
                except BaseException as e:  # noqa: B902 -- re-raised by optimize(), in its own thread
                    with lock:
                        failure.append(e)
                    return

        if n_trials is None and timeout is None:
            _logger.warning("optimize: neither n_trials nor timeout given: trials run until stop() or Ctrl-C")
        with self._best_lock:
            self._best = None
            for t in self.trials:
                self._note_best(t)
        self._engine.hold()
        try:
            self._run_workers(worker, n_jobs)
        finally:
            self._engine.release()
        if failure:
            raise failure[0]

    def _run_workers(self, worker, n_jobs):
        if n_jobs == 1:
            worker()
        else:
            threads = [_threading.Thread(target=worker, name=f"paratune-trial-{j}", daemon=True)
                       for j in range(n_jobs)]
            for t in threads:
                t.start()
            try:
                for t in threads:
                    while t.is_alive():
                        t.join(0.05)  # Ctrl-C reaches this thread between waits
            except KeyboardInterrupt:
                self._stop.set()
                for t in threads:
                    t.join()
                raise

    def _run_trial(self, func, catch):
        """One trial: func called, its end told, logged; returns the stored trial. Raises what optimize()
        must re-raise (after telling the trial how it ended)."""
        trial = self.ask()
        reraise = None
        value = None
        values = []
        try:
            returned = func(trial)
        except BaseException as e:  # noqa: B902 -- every end is told to the study before anything else
            if _is_pruned(e):
                state, reason = "pruned", ""
            elif isinstance(e, KeyboardInterrupt):
                state, reason, reraise = "interrupted", "KeyboardInterrupt", e
            else:
                state = "oom" if _is_out_of_memory(e) else "fail"
                reason = _exception_text(e)
                if not isinstance(e, catch):
                    reraise = e
        else:
            state, reason = "complete", ""
            if self._many():
                values, reason = _floats(returned)
                state = "fail" if reason else "complete"
            elif returned is not None:
                if isinstance(returned, (list, tuple)) and len(returned) == 1:
                    returned = returned[0]  # [value]: one objective's value, as Optuna takes it
                value = _real(returned)
                if value is None:
                    state, reason = "fail", f"the objective returned {returned!r}, not a number"
        many = values if self._many() and state == "complete" else []
        frozen = self._told(trial, self._engine.tell(trial._trial_id, state, value, reason, many))
        self._log(frozen)
        if reraise is not None:
            raise reraise
        return frozen

    def _note_best(self, t):
        """Keeps the best completed trial for the log (under _best_lock), by best_trial's rule; none with
        several objectives."""
        if self._many() or t.state != TrialState.COMPLETE or t.value is None:
            return
        sign = 1 if self.direction == "minimize" else -1
        if self._best is None or (sign * t.value, t.number) < (sign * self._best[1], self._best[0]):
            self._best = (t.number, t.value)

    def _log(self, t):
        with self._best_lock:
            self._note_best(t)
            best = self._best
        best_text = "no trial completed yet" if best is None else f"best is trial {best[0]} with value {best[1]}"
        params = _json.dumps(t.params, separators=(",", ":"), default=repr)
        if self._many():
            if t.state == TrialState.COMPLETE:
                _logger.info(f"trial {t.number} completed with values {t.values} and parameters {params}")
            else:
                _logger.warning(f"trial {t.number} {t.status} with parameters {params}: {t.reason}")
            return
        if t.state == TrialState.COMPLETE:
            _logger.info(f"trial {t.number} completed with value {t.value} and parameters {params}; {best_text}")
        elif t.state == TrialState.PRUNED:
            _logger.info(f"trial {t.number} pruned at step {t.last_step} with parameters {params}; {best_text}")
        else:
            _logger.warning(f"trial {t.number} {t.status} with parameters {params}: {t.reason}; {best_text}")

    def trials_dataframe(self, attrs=("number", "value", "datetime_start", "datetime_complete", "duration", "params",
                                      "user_attrs", "state")):
        """trials_dataframe(self, attrs: Sequence[str] = ('number', 'value', 'datetime_start', 'datetime_complete', 'duration', 'params', 'user_attrs', 'state')) -> Any

        The trials as a pandas DataFrame, one row each, Optuna's columns: number, value (values_0, values_1,
        ... with several objectives), datetime_start, datetime_complete, duration, params_<name>,
        user_attrs_<key>, state (its name). Needs pandas."""
        try:
            import pandas
        except ImportError:
            raise ImportError("trials_dataframe: needs pandas, which is not installed (apt install python3-pandas, "
                              "or pip install pandas); study.trials has the same data without it") from None
        known = {"number", "value", "datetime_start", "datetime_complete", "duration", "params", "user_attrs",
                 "system_attrs", "state", "intermediate_values"}
        for a in attrs:
            if a not in known:
                raise Error(f"trials_dataframe: attrs {a!r}: must be among {sorted(known)}")
        rows = []
        for t in self.trials:
            row = {}
            for a in attrs:
                if a in ("params", "user_attrs", "system_attrs", "intermediate_values"):
                    for k, v in getattr(t, a).items():
                        row[f"{a}_{k}"] = v
                elif a == "state":
                    row[a] = t.state.name
                elif a == "value" and self._many():
                    for i, v in enumerate(t.values or [None] * len(self.directions)):
                        row[f"values_{i}"] = v
                else:
                    row[a] = getattr(t, a)
            rows.append(row)
        return pandas.DataFrame(rows)

    def __repr__(self):
        return f"<paratune.LiveStudy '{self.study_name}' in {self.storage}: {','.join(self.directions)}>"


def _told_state(state, values):
    """tell()'s state: a TrialState, Optuna's (anything with that .name) or its name; by default COMPLETE
    with a value, FAIL without."""
    if state is None:
        return "complete" if values is not None else "fail"
    name = state.name if hasattr(state, "name") else str(state)
    told = {"COMPLETE": "complete", "PRUNED": "pruned", "FAIL": "fail"}.get(name.upper())
    if told is None:
        raise Error(f"tell: state {state!r}: must be COMPLETE, PRUNED or FAIL")
    if told == "complete" and values is None:
        raise Error("tell: state COMPLETE needs a value")
    if told != "complete" and values is not None:
        raise Error(f"tell: values {values!r} with state {name.upper()}: only a COMPLETE trial has values (as in "
                    "Optuna)")
    return told


def _floats(values):
    """An objective's return (or tell's values) in a study of several objectives as floats, and "" -- or
    [] and why it is not a list of numbers."""
    if values is None or isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        return [], f"the objective returned {values!r}, not a tuple or list of one number per objective"
    out = []
    try:
        items = list(values)
    except Exception:  # noqa: BLE001 -- a 0-d tensor has __iter__ and raises TypeError
        return [], f"the objective returned {values!r}, not a tuple or list of one number per objective"
    for v in items:
        number = _real(v)
        if number is None:
            return [], f"the objective returned {values!r}: {v!r} is not a number"
        out.append(number)
    return out, ""


def _whole(value):
    """A whole number given as a Python or numpy int, as an int; None when it is not one (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
        return None
    return int(value)


def _as_int(value):
    """A numpy whole number as a Python int; anything else as it is (for the caller to check)."""
    whole = _whole(value)
    return value if whole is None else whole


def _checked_count(what, value):
    if value is None:
        return None
    count = _whole(value)
    if count is None or count < 0:
        raise Error(f"optimize: {what} {value!r}: must be a whole number >= 0 (an int), or None")
    return count


_SAMPLERS = ("random", "tpe", "gp", "nsga2")
_PRUNERS = ("none", "median", "percentile", "asha", "hyperband")


# The pruners' settings (hpo/pruner.h PrunerOptions): whole numbers or numbers; their ranges are the
# engine's to check.
_PRUNER_OPTIONS = {"startup_trials": int, "warmup_steps": int, "percentile": float, "min_resource": int,
                   "eta": float}


def _startup_trials(options):
    """sampler_options: {"startup_trials": n}, the trials drawn from the prior before the model (tpe, gp);
    -1 (or absent): the sampler's default."""
    options = {} if options is None else options
    if not hasattr(options, "items"):
        raise Error(f"sampler_options {options!r}: must be a dict (of startup_trials)")
    for key in options:
        if key != "startup_trials":
            raise Error(f"sampler_options: unknown option {key!r}; valid: startup_trials")
    value = options.get("startup_trials", -1)
    value = _as_int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not -1 <= value < 2**31:
        raise Error(f"sampler_options.startup_trials {value!r}: must be a whole number >= 0 (-1: the sampler's default)")
    return value


def _checked_pruner_options(options):
    if options is None:
        return {}
    if not hasattr(options, "items"):
        raise Error(f"pruner_options {options!r}: must be a dict (of {', '.join(_PRUNER_OPTIONS)})")
    checked = {}
    for key, value in options.items():
        kind = _PRUNER_OPTIONS.get(key)
        if kind is None:
            raise Error(f"pruner_options: unknown option {key!r}; valid: {', '.join(_PRUNER_OPTIONS)}")
        if isinstance(value, bool) or not isinstance(value, _numbers.Real) or (
                kind is int and not float(value).is_integer()) or not abs(value) < 2**31:
            rule = "a whole number" if kind is int else "a number"
            raise Error(f"pruner_options.{key} {value!r}: must be {rule} (of magnitude below 2**31)")
        checked[key] = kind(value)
    return checked


def _direction(direction):
    """'minimize' or 'maximize', from that text or Optuna's StudyDirection."""
    if direction not in ("minimize", "maximize"):
        name = getattr(direction, "name", None)  # optuna.study.StudyDirection.MINIMIZE
        if isinstance(name, str) and name.lower() in ("minimize", "maximize"):
            return name.lower()
        raise Error(f"direction {direction!r}: must be 'minimize' or 'maximize'")
    return direction


def _locator(storage):
    """The store a storage argument names: ':memory:', an SQLite file's path or a postgresql:// URL."""
    if storage is None:
        storage = ":memory:"
    if isinstance(storage, _os.PathLike):
        storage = _os.fspath(storage)
    if not isinstance(storage, str) or not storage:
        raise Error(f"storage {storage!r}: must be None, ':memory:', an SQLite file's path or a postgresql:// URL")
    # Optuna's SQLAlchemy URLs: sqlite:///FILE (its ?options are SQLAlchemy's), sqlite:// (in memory),
    # postgresql+DRIVER://.
    if storage.startswith("sqlite:///"):
        return storage[len("sqlite:///"):].split("?", 1)[0]
    if storage.split("?", 1)[0] == "sqlite://":
        return ":memory:"
    if storage.startswith("postgresql+"):
        return "postgresql://" + storage.split("://", 1)[1]
    if "://" in storage and not storage.startswith(("postgresql://", "postgres://")):
        raise Error(f"storage {storage!r}: paratune stores studies in SQLite files and PostgreSQL; not in "
                    f"{storage.split('://', 1)[0]}")
    return storage


def _open(storage, study_name, direction, sampler, pruner, load_if_exists, must_exist, seed, sampler_options,
          pruner_options, steps, directions=None):
    storage = _locator(storage)
    direction = _direction(direction)
    if directions is not None:
        if isinstance(directions, (str, bytes)) or not hasattr(directions, "__iter__"):
            raise Error(f"directions {directions!r}: must be a list of 'minimize' or 'maximize', one per objective")
        directions = [_direction(d) for d in directions]
        if not directions:
            raise Error("directions []: must name one direction per objective")
        direction = directions[0]
    directions = directions if directions is not None and len(directions) > 1 else []
    # Optuna's sampler and pruner objects (paratune.samplers, paratune.pruners) carry a name and settings.
    if isinstance(sampler, _samplers.BaseSampler):
        if seed is not None and sampler.seed is not None and seed != sampler.seed:
            raise Error(f"seed {seed!r}: the sampler {sampler!r} has seed {sampler.seed!r}; give one of them")
        if sampler_options is not None and sampler.startup_trials != -1:
            raise Error(f"sampler_options {sampler_options!r}: the sampler {sampler!r} sets its startup trials; give "
                        "one of them")
        seed = sampler.seed if seed is None else seed
        sampler_options = {"startup_trials": sampler.startup_trials} if sampler_options is None else sampler_options
        sampler = sampler.name
    if isinstance(pruner, _pruners.BasePruner):
        if pruner_options is not None:
            raise Error(f"pruner_options {pruner_options!r}: the pruner {pruner!r} has its settings; give one of them")
        pruner_options = pruner.options
        if pruner.steps is not None:
            if steps not in (0, pruner.steps):
                raise Error(f"steps {steps!r}: the pruner {pruner!r} has max_resource {pruner.steps!r}; give one of "
                            "them")
            steps = pruner.steps
        pruner = pruner.name
    sampler = "tpe" if sampler is None else sampler
    if sampler not in _SAMPLERS:
        if sampler in ("grid", "cmaes"):
            raise Error(f"sampler {sampler!r}: {sampler} searches a space given in advance, which create_study's "
                        f"space defined by the run is not: paratune.tune(objective, space, sampler='{sampler}')")
        raise Error(f"sampler {sampler!r}: must be one of {', '.join(_SAMPLERS)}, by name or as a paratune.samplers "
                    "object")
    # None: a stored study's own pruner; a new one's Optuna's default, MedianPruner -- none with several
    # objectives, which no pruner judges (the engine decides, as a stored study is known only to it).
    if pruner is not None and pruner not in _PRUNERS:
        raise Error(f"pruner {pruner!r}: must be one of {', '.join(_PRUNERS)}, by name or as a paratune.pruners object")
    seed = _as_int(seed)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        raise Error(f"seed {seed!r}: must be a whole number from 0 to 2**64 - 1, or None")
    if seed is None:
        seed = int.from_bytes(_os.urandom(8), "little")  # Optuna's samplers are unseeded by default
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise Error(f"steps {steps!r}: must be a whole number >= 0 (0: a trial has no fixed length)")
    if not isinstance(study_name, str) or not (study_name or must_exist):
        raise Error(f"study_name {study_name!r}: must be a non-empty str")
    try:
        engine = _Engine(storage, study_name, direction, sampler, pruner or "", seed, _startup_trials(sampler_options),
                         load_if_exists, must_exist, steps, _checked_pruner_options(pruner_options), directions)
    except Error as e:  # Optuna's exception classes for the two errors ported code catches
        text = str(e)
        if "has a study of that name already" in text:
            raise _exceptions.DuplicatedStudyError(text) from None
        if must_exist and ("has no such study" in text or "holds no study" in text):
            raise _exceptions.StudyNotFoundError(text) from None
        raise
    return LiveStudy(engine, engine.locator if storage == ":memory:" else storage)


def create_study(storage=None, sampler=None, pruner=None, study_name=None, direction=None,
                 load_if_exists=False, *, seed=None, sampler_options=None, pruner_options=None, steps=0,
                 directions=None):
    """create_study(storage: str | PathLike | None = None, sampler: str | None = None, pruner: str | None = None, study_name: str | None = None, direction: str | None = None, load_if_exists: bool = False, *, seed: int | None = None, sampler_options: Mapping[str, int] | None = None, pruner_options: Mapping[str, float] | None = None, steps: int = 0, directions: Sequence[str] | None = None) -> LiveStudy

    A new study whose space is defined by its runs (Optuna's create_study). storage: None or ':memory:'
    (a temporary SQLite file, removed with the study object), an SQLite file (or 'sqlite:///file'), or a
    postgresql:// URL. sampler: 'tpe' (default), 'gp' or 'random', with sampler_options startup_trials, or
    a paratune.samplers object (Optuna's classes: TPESampler(seed=1), ...); pruner: 'median' (default),
    'percentile', 'asha', 'hyperband' or 'none', with pruner_options startup_trials, warmup_steps,
    percentile, min_resource, eta, or a paratune.pruners object (MedianPruner(n_startup_trials=5), ...).
    study_name None: a new unique name, 'no-name-' and a UUID (as Optuna's). A study of that name
    already there is an error unless load_if_exists. seed: the sampler's (None: a random one).
    steps: the steps of a full trial, if it has such a number (asha and hyperband need it). direction:
    'minimize' (default) or 'maximize'. directions: one per objective, for several (Optuna's): the
    objective returns a tuple of values, study.best_trials is the Pareto front; sampler 'tpe', 'nsga2', 'gp'
    or 'random', no pruner; not with direction."""
    if direction is not None and directions is not None:
        raise Error("create_study: give direction (one objective) or directions (several), not both")
    if study_name is None:
        study_name = f"no-name-{_uuid.uuid4()}"  # Optuna's rule
    return _open(storage, study_name, direction or "minimize", sampler, pruner, bool(load_if_exists), False, seed,
                 sampler_options, pruner_options, steps, directions)


def load_study(study_name, storage, sampler=None, pruner=None, *, seed=None, sampler_options=None,
               pruner_options=None):
    """load_study(study_name: str | None, storage: str | PathLike, sampler: str | None = None, pruner: str | None = None, *, seed: int | None = None, sampler_options: Mapping[str, int] | None = None, pruner_options: Mapping[str, float] | None = None) -> LiveStudy

    A study made by create_study, to run more trials or read them (Optuna's load_study): its direction,
    steps and pruner as stored (a pruner given must be the one it was made with); the sampler as given
    here. Loading never waits for another process running the study's trials. study_name None: the
    storage's only study."""
    if study_name == "":
        raise Error("load_study: study_name '': must be a non-empty str, or None (the storage's only study)")
    return _open(storage, "" if study_name is None else study_name, "minimize", sampler, pruner, True, True,
                 seed, sampler_options, pruner_options, 0)


class StudySummary:
    """A study of a storage as get_all_study_summaries lists it (Optuna's StudySummary): study_name,
    direction (None with several objectives) and directions, n_trials, best_trial (a FrozenTrial for a
    create_study study; for one paratune.tune or the command line ran, its stored trial; None when none
    completed, or with several objectives), datetime_start (its first trial's start, None without
    trials), user_attrs and system_attrs (empty: paratune keeps none with a study)."""

    def __init__(self, view, best_trial):
        self.study_name = view.name
        self.directions = [StudyDirection(d) for d in view.directions]
        self.direction = self.directions[0] if len(self.directions) == 1 else None
        trials = view.trials
        self.n_trials = len(trials)
        self.best_trial = best_trial
        self.datetime_start = (_datetime.datetime.fromtimestamp(min(t.started_unix_s for t in trials))
                               if trials else None)
        self.user_attrs = {}
        self.system_attrs = {}

    def __repr__(self):
        return f"<paratune.study.StudySummary '{self.study_name}': {self.n_trials} trials>"


def get_all_study_names(storage):
    """get_all_study_names(storage: str | PathLike) -> list[str]

    The names of the studies in storage (Optuna's get_all_study_names): an SQLite file (or 'sqlite:///file')
    or a postgresql:// URL."""
    locator = _locator(storage)
    if locator == ":memory:":
        raise Error(f"storage {storage!r}: an in-memory storage belongs to its study object; list a file or a "
                    "postgresql:// URL")
    return list(_studies(locator))


def get_all_study_summaries(storage, include_best_trial=True):
    """get_all_study_summaries(storage: str | PathLike, include_best_trial: bool = True) -> list[StudySummary]

    Each study in storage, summarized (Optuna's get_all_study_summaries): its name, direction, trial count,
    best trial (left out, None, unless include_best_trial) and start."""
    summaries = []
    locator = _locator(storage)
    for name in get_all_study_names(storage):
        view = _open_study(locator, name)
        best = None
        if include_best_trial and len(view.directions) == 1 and view.best is not None:
            best = view.best
            if view.kind == "hpo" and "space_by" in view.identity:  # create_study's: as Optuna gives it
                best = load_study(name, storage).best_trial
        summaries.append(StudySummary(view, best))
    return summaries


def _not_found(error):
    """The engine's Error as StudyNotFoundError (a KeyError, as Optuna raises) when it says there is no such
    study or store; else as it is."""
    text = str(error)
    if "unknown study '" in text or "holds no study" in text or "no such study file" in text:
        return _exceptions.StudyNotFoundError(text)
    return error


def delete_study(study_name, storage):
    """delete_study(study_name: str, storage: str | PathLike) -> None

    Deletes the study with every trial (Optuna's delete_study; `paratune study delete`). StudyNotFoundError (a
    KeyError, as Optuna raises) when the storage has no such study; paratune.Error while a process is running
    it."""
    if not isinstance(study_name, str) or not study_name:
        raise Error(f"delete_study: study_name {study_name!r}: must be a non-empty str")
    locator = _locator(storage)
    if locator == ":memory:":
        raise Error("delete_study: storage ':memory:': an in-memory study lives with its study object only")
    try:
        _delete_study(locator, study_name)
    except Error as e:
        raise _not_found(e) from None


def copy_study(from_study_name, from_storage, to_storage, to_study_name=None):
    """copy_study(from_study_name: str, from_storage: str | PathLike, to_storage: str | PathLike, to_study_name: str | None = None) -> None

    Copies the study with every trial, step and metric into to_storage (created if needed), as to_study_name
    when given (Optuna's copy_study; `paratune study copy`). DuplicatedStudyError when to_storage has a study
    of that name already (nothing is written then); StudyNotFoundError when from_storage has no such study."""
    for what, name in (("from_study_name", from_study_name), ("to_study_name", to_study_name)):
        if name is not None and (not isinstance(name, str) or not name):
            raise Error(f"copy_study: {what} {name!r}: must be a non-empty str")
    if from_study_name is None:
        raise Error("copy_study: from_study_name None: name the study to copy")
    source, target = _locator(from_storage), _locator(to_storage)
    if ":memory:" in (source, target):
        raise Error("copy_study: storage ':memory:': an in-memory study lives with its study object only")
    try:
        _copy_study(source, target, from_study_name, to_study_name or "")
    except Error as e:
        if "already holds a study" in str(e):
            raise _exceptions.DuplicatedStudyError(str(e)) from None
        raise _not_found(e) from None
