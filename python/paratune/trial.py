"""paratune.trial: TrialState, FixedTrial, and the Trial and FrozenTrial of create_study's studies, where Optuna
keeps them (optuna.trial), so that ported code changes only its import."""

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
        self.distributions = {}  # each suggested parameter's call, as (kind, arguments)
        self.user_attrs = {}
        self.system_attrs = {}
        self.datetime_start = _datetime.datetime.now()

    def _suggest(self, call, name, distribution, fits):
        if name not in self._fixed:
            raise ValueError(f"{call}: the parameter '{name}' is not among the FixedTrial's params "
                             f"({', '.join(map(repr, self._fixed)) or 'none'})")
        value = self._fixed[name]
        if not fits(value):
            kind, *asked = distribution
            if kind == "categorical":
                what = f"the choices {asked[0]!r}"
            else:
                low, high, step, log = asked
                what = f"{low}..{high}" + (f" on a step of {step}" if step and step != 1 else "") + (
                    " (log)" if log else "")
            _warnings.warn(f"{call}: the fixed value {value!r} is not one of {what}", UserWarning, stacklevel=3)
        self.distributions[name] = distribution
        return self.params.setdefault(name, value)

    @staticmethod
    def _in_range(value, low, high, step, log, integral):
        if isinstance(value, bool) or not isinstance(value, _numbers.Real) or not low <= value <= high:
            return False
        if integral and not float(value).is_integer():
            return False
        if step and not log:
            k = (value - low) / step
            return _math.isclose(k, round(k), abs_tol=1e-9)
        return True

    def suggest_float(self, name, low, high, *, step=None, log=False):
        """suggest_float(self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False) -> float

        params[name] (a UserWarning when it is outside low..high or off the step's grid)."""
        return self._suggest(f"suggest_float('{name}')", name, ("float", low, high, step, log),
                             lambda v: self._in_range(v, low, high, step, log, False))

    def suggest_int(self, name, low, high, step=1, log=False):
        """suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int

        int(params[name]) (a UserWarning when it is outside low..high or off the step's grid)."""
        return int(self._suggest(f"suggest_int('{name}')", name, ("int", low, high, step, log),
                                 lambda v: self._in_range(v, low, high, step, log, True)))

    def suggest_categorical(self, name, choices):
        """suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any

        params[name] (a UserWarning when it is not one of choices)."""
        choices = tuple(choices)
        return self._suggest(f"suggest_categorical('{name}')", name, ("categorical", choices),
                             lambda v: any(v is c or v == c for c in choices))

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
