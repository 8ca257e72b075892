"""paratune.trial: TrialState, FixedTrial, create_trial, and the Trial and FrozenTrial of create_study's studies,
where Optuna keeps them (optuna.trial), so that ported code changes only its import."""

import datetime as _datetime
import enum as _enum
import math as _math
import numbers as _numbers
import warnings as _warnings


class TrialState(_enum.IntEnum):
    """How a trial stands (Optuna's TrialState, an IntEnum with the same values): RUNNING, COMPLETE, PRUNED or
    FAIL (failed, out of memory or interrupted: FrozenTrial.status says which); WAITING is Optuna's state of
    an enqueued trial, which paratune never shows (its queue is not stored). A member equals Optuna's member
    of the same name, so that ported code that still imports optuna.trial.TrialState compares and filters
    as it did."""

    RUNNING = 0
    COMPLETE = 1
    PRUNED = 2
    FAIL = 3
    WAITING = 4

    def is_finished(self):
        """Whether the trial has ended (COMPLETE, PRUNED or FAIL)."""
        return self not in (TrialState.RUNNING, TrialState.WAITING)

    def __eq__(self, other):
        return equal_by_name(self, other, "TrialState", int.__eq__)

    def __ne__(self, other):
        return not_equal(self.__eq__(other))

    __hash__ = int.__hash__  # as Optuna's members (IntEnum), so sets and dicts mix the two


class FixedTrial:
    """A trial whose parameters are given (Optuna's FixedTrial): each ``suggest_*`` returns ``params[name]``, so an
    objective runs again with chosen values outside any study -- ``objective(FixedTrial(study.best_params))``.
    A name missing from ``params`` raises ValueError; a value outside what the call asks for (its bounds, step or
    choices) is returned with a UserWarning, as Optuna does. ``report`` keeps nothing, ``should_prune`` is False."""

    def __init__(self, params, number=0):
        self._fixed = dict(params)
        self.number = number
        self.params = {}  # as suggested so far
        self.distributions = {}  # each suggested parameter's distribution (paratune.distributions)
        self.user_attrs = {}
        self.system_attrs = {}
        self.datetime_start = _datetime.datetime.now()

    def _suggest(self, call, name, distribution):
        if name not in self._fixed:
            raise ValueError(f"{call}: the parameter '{name}' is not among the FixedTrial's params "
                             f"({', '.join(map(repr, self._fixed)) or 'none'})")
        value = self._fixed[name]
        if not distribution._contains(value):
            _warnings.warn(f"{call}: the fixed value {value!r} is not in {distribution!r}", UserWarning, stacklevel=3)
        self.distributions[name] = distribution
        return self.params.setdefault(name, value)

    def suggest_float(self, name, low, high, *, step=None, log=False):
        """suggest_float(self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False) -> float

        params[name] (a UserWarning when it is outside low..high or off the step's grid)."""
        from .distributions import FloatDistribution
        return self._suggest(f"suggest_float('{name}')", name, FloatDistribution(low, high, log, step))

    def suggest_int(self, name, low, high, step=1, log=False):
        """suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int

        int(params[name]) (a UserWarning when it is outside low..high or off the step's grid)."""
        from .distributions import IntDistribution
        return int(self._suggest(f"suggest_int('{name}')", name, IntDistribution(low, high, log, step)))

    def suggest_categorical(self, name, choices):
        """suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any

        params[name] (a UserWarning when it is not one of choices)."""
        from .distributions import CategoricalDistribution
        return self._suggest(f"suggest_categorical('{name}')", name, CategoricalDistribution(choices))

    def suggest_uniform(self, name, low, high):
        """Optuna's deprecated form of suggest_float(name, low, high)."""
        return self.suggest_float(name, low, high)

    def suggest_loguniform(self, name, low, high):
        """Optuna's deprecated form of suggest_float(name, low, high, log=True)."""
        return self.suggest_float(name, low, high, log=True)

    def suggest_discrete_uniform(self, name, low, high, q):
        """Optuna's deprecated form of suggest_float(name, low, high, step=q)."""
        return self.suggest_float(name, low, high, step=q)

    def report(self, value, step):
        """Nothing is kept (no study)."""

    def report_metric(self, name, value, step=None):
        """Nothing is kept (no study)."""

    def should_prune(self):
        """False: no pruner judges a fixed trial."""
        return False

    def set_user_attr(self, key, value):
        """Kept in user_attrs."""
        self.user_attrs[key] = value

    def set_system_attr(self, key, value):
        """Kept in system_attrs (Optuna's deprecated attribute)."""
        self.system_attrs[key] = value

    def __repr__(self):
        return f"<paratune.trial.FixedTrial {self.number} {self._fixed!r}>"


def create_trial(*, state=TrialState.COMPLETE, value=None, values=None, params=None, distributions=None,
                 user_attrs=None, system_attrs=None, intermediate_values=None):
    """create_trial(*, state: TrialState = TrialState.COMPLETE, value: float | None = None, values: Sequence[float] | None = None, params: dict[str, Any] | None = None, distributions: dict[str, BaseDistribution] | None = None, user_attrs: dict[str, Any] | None = None, system_attrs: dict[str, Any] | None = None, intermediate_values: dict[int, float] | None = None) -> FrozenTrial

    A finished trial made by hand, for study.add_trial (Optuna's create_trial): params and distributions name
    the same parameters, each value in its distribution (paratune.distributions); a COMPLETE trial has value
    (or values, one per objective), a PRUNED or FAIL one none. Its number is -1 until a study adds it."""
    from . import distributions as _distributions
    from ._study import FrozenTrial, _real, _stored_choice

    from ._core import Error
    state = TrialState(state)
    if not state.is_finished():
        raise Error(f"create_trial: state {state.name}: paratune creates finished trials only (COMPLETE, PRUNED or "
                    "FAIL)")
    params, distributions = dict(params or {}), dict(distributions or {})
    _distributions._check_params("create_trial", params, distributions)
    if value is not None and values is not None:
        raise Error("create_trial: value and values: give one of them")
    if value is not None:
        values = [value]
    if values is not None:
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise Error(f"create_trial: values {values!r}: must be a list of numbers")
        numbers = [_real(v) for v in values]
        if not numbers or any(v is None or not _math.isfinite(v) for v in numbers):
            raise Error(f"create_trial: values {list(values)!r}: must be finite numbers, one per objective")
        values = numbers
    if state == TrialState.COMPLETE and values is None:
        raise Error("create_trial: state COMPLETE: needs value (or values)")
    if state != TrialState.COMPLETE and values is not None:
        raise Error(f"create_trial: state {state.name}: takes no value (a pruned trial's value is its last "
                    "intermediate value)")
    intermediate = {}
    for step, v in dict(intermediate_values or {}).items():
        number = _real(v)
        if isinstance(step, bool) or not isinstance(step, _numbers.Integral) or step < 0 or number is None:
            raise Error(f"create_trial: intermediate_values[{step!r}] {v!r}: steps are whole numbers >= 0 and "
                        "values numbers")
        intermediate[int(step)] = number
    now = _datetime.datetime.now().timestamp()
    stored = {"number": 0, "status": {TrialState.COMPLETE: "completed", TrialState.PRUNED: "pruned"}.get(state, "failed"),
              "reason": "", "value": values[0] if values and len(values) == 1 else None,
              "params": {n: _stored_choice(v) for n, v in params.items()},
              "distributions": {n: d._stored() for n, d in distributions.items()},
              "user_attrs": dict(user_attrs or {}), "intermediate_values": intermediate,
              "started_unix_s": now, "ended_unix_s": now}
    if values is not None and len(values) > 1:
        stored["values"] = values
    trial = FrozenTrial(stored)
    trial.params = params  # the very objects given
    trial.distributions = distributions
    trial.system_attrs = dict(system_attrs or {})
    return trial


def equal_by_name(member, other, enum_name, plain_eq):
    """member == other for paratune's copies of Optuna's enums: against a member of another library's enum called
    `enum_name` (Optuna's), whether the names are the same; otherwise `plain_eq` (int's or str's)."""
    if isinstance(other, _enum.Enum) and type(other).__name__ == enum_name and type(other) is not type(member):
        return member.name == other.name
    return plain_eq(member, other)


def not_equal(equal):
    """!= from the == result (NotImplemented stays NotImplemented)."""
    return equal if equal is NotImplemented else not equal


def __getattr__(name):
    # Trial and FrozenTrial live in _study.py, which imports this module: read from there when asked.
    if name in ("Trial", "FrozenTrial"):
        from . import _study
        return {"Trial": _study.LiveTrial, "FrozenTrial": _study.FrozenTrial}[name]
    raise AttributeError(f"module 'paratune.trial' has no attribute {name!r}")
