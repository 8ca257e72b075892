"""paratune.distributions: what a parameter was drawn from (Optuna's FloatDistribution, IntDistribution and
CategoricalDistribution, where optuna.distributions keeps them). A FrozenTrial's ``distributions`` are these;
``paratune.trial.create_trial`` takes them, as Optuna's does."""

import decimal as _decimal
import math as _math
import numbers as _numbers


def _error(message):
    from ._core import Error  # a ValueError, as Optuna raises
    return Error(message)


def _number(kind, what, value, integral=False):
    if isinstance(value, bool) or not isinstance(value, _numbers.Real) or not _math.isfinite(value) or (
            integral and not float(value).is_integer()):
        raise _error(f"{kind}: {what} {value!r}: must be a finite {'whole number' if integral else 'number'}")
    return int(value) if integral else float(value)


def _on_grid_high(kind, low, high, step):
    """high moved down onto low, low + step, ... (Optuna's rule), in decimal so that 0..1 on a step of 0.3
    ends at 0.9, not 0.8999999999999999; a high within rounding of a grid point (as a stored one) is that
    point."""
    k = (high - low) / step
    n = round(k) if abs(k - round(k)) <= 1e-9 * max(1.0, abs(k)) else _math.floor(k)
    if kind is int:
        return low + int(n) * step
    return float(_decimal.Decimal(repr(low)) + int(n) * _decimal.Decimal(repr(step)))


def _repeated_choice(choices):
    """The index of the first choice listed a second time (as stored: True, 1 and 1.0 differ; others by
    repr()), or None."""
    from ._study import _same_stored, _stored_choice
    stored = [_stored_choice(c) for c in choices]
    for i, s in enumerate(stored):
        if any(_same_stored(s, t) for t in stored[:i]):
            return i
    return None


class BaseDistribution:
    """A parameter's distribution. Two are equal when they are of the same kind with the same fields."""

    def _fields(self):
        raise NotImplementedError

    def _stored(self):
        """The form the study stores (a trial's "distributions" as the engine writes them)."""
        raise NotImplementedError

    def _contains(self, value):
        """Whether `value` (the parameter's value as the objective got it) may be drawn from this."""
        raise NotImplementedError

    def single(self):
        """single(self) -> bool

        Whether only one value can be drawn."""
        raise NotImplementedError

    def __eq__(self, other):
        if not isinstance(other, BaseDistribution):
            return NotImplemented
        return type(self) is type(other) and self._fields() == other._fields()

    def __hash__(self):
        return hash((type(self).__name__, repr(self._fields())))

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"{type(self).__name__}({fields})"


class FloatDistribution(BaseDistribution):
    """A float from low to high: uniform, in log space with log=True (low > 0), or on the grid low,
    low + step, ... with step (high moved down onto it, as Optuna does; step and log cannot be used
    together)."""

    def __init__(self, low, high, log=False, step=None):
        kind = "FloatDistribution"
        self.low = _number(kind, "low", low)
        self.high = _number(kind, "high", high)
        self.log = bool(log)
        self.step = None if step is None else _number(kind, "step", step)
        if self.low > self.high:
            raise _error(f"{kind}: low {self.low} must be <= high {self.high}")
        if self.log and self.step is not None:
            raise _error(f"{kind}: step {self.step} with log=True: a distribution has one or the other")
        if self.log and self.low <= 0:
            raise _error(f"{kind}: low {self.low} with log=True: must be > 0")
        if self.step is not None and not self.step > 0:
            raise _error(f"{kind}: step {self.step}: must be > 0, or None")
        if self.step is not None:
            self.high = _on_grid_high(float, self.low, self.high, self.step)

    def _fields(self):
        return {"low": self.low, "high": self.high, "log": self.log, "step": self.step}

    def _stored(self):
        out = {"type": "float", "low": self.low, "high": self.high, "log": self.log}
        if self.step is not None:
            out["step"] = self.step
        return out

    def _contains(self, value):
        if isinstance(value, bool) or not isinstance(value, _numbers.Real) or not self.low <= value <= self.high:
            return False
        if self.step is None:
            return True
        k = (value - self.low) / self.step
        return abs(k - round(k)) <= 1e-8 * max(1.0, abs(k))

    def single(self):
        return self.low == self.high or (self.step is not None and self.high - self.low < self.step)


class IntDistribution(BaseDistribution):
    """An int from low to high, both included: uniform, in log space with log=True (low >= 1), or on
    low, low + step, ... (high moved down onto it, as Optuna does; step > 1 and log cannot be used
    together)."""

    def __init__(self, low, high, log=False, step=1):
        kind = "IntDistribution"
        self.low = _number(kind, "low", low, integral=True)
        self.high = _number(kind, "high", high, integral=True)
        self.log = bool(log)
        self.step = _number(kind, "step", step, integral=True)
        if self.low > self.high:
            raise _error(f"{kind}: low {self.low} must be <= high {self.high}")
        if self.step < 1:
            raise _error(f"{kind}: step {self.step}: must be 1 or more")
        if self.log and self.step != 1:
            raise _error(f"{kind}: step {self.step} with log=True: log needs step 1")
        if self.log and self.low < 1:
            raise _error(f"{kind}: low {self.low} with log=True: must be >= 1")
        self.high = _on_grid_high(int, self.low, self.high, self.step)

    def _fields(self):
        return {"low": self.low, "high": self.high, "log": self.log, "step": self.step}

    def _stored(self):
        return {"type": "int", "low": self.low, "high": self.high, "log": self.log, "step": self.step}

    def _contains(self, value):
        if isinstance(value, bool) or not isinstance(value, _numbers.Real) or not float(value).is_integer():
            return False
        return self.low <= value <= self.high and (int(value) - self.low) % self.step == 0

    def single(self):
        return self.high - self.low < self.step


class CategoricalDistribution(BaseDistribution):
    """One of `choices`: None, bools, numbers, strings or other hashables, each listed once."""

    def __init__(self, choices):
        if isinstance(choices, (str, bytes)) or not hasattr(choices, "__iter__"):
            raise _error(f"CategoricalDistribution: choices {choices!r}: must be a sequence of values")
        self.choices = tuple(choices)
        if not self.choices:
            raise _error("CategoricalDistribution: choices (): must hold at least one value")
        repeated = _repeated_choice(self.choices)
        if repeated is not None:
            raise _error(f"CategoricalDistribution: choices {self.choices!r}: {self.choices[repeated]!r} is listed "
                         "twice (or two choices have the same repr())")

    def _fields(self):
        return {"choices": self.choices}

    def _stored(self):
        from ._study import _stored_choice
        return {"type": "categorical", "choices": [_stored_choice(c) for c in self.choices]}

    def _contains(self, value):
        from ._study import _same_stored, _stored_choice
        return any(_same_stored(_stored_choice(value), _stored_choice(c)) for c in self.choices)

    def single(self):
        return len(self.choices) == 1


def _from_stored(stored, originals=None):
    """A stored distribution (a trial's, as the engine writes it) as its class; the choices of a
    categorical as the objects listed in this process where `originals` has them. Anything else is given
    back as it is."""
    if not isinstance(stored, dict):
        return stored
    kind = stored.get("type")
    if kind == "float":
        return FloatDistribution(stored["low"], stored["high"], stored.get("log", False), stored.get("step"))
    if kind == "int":
        return IntDistribution(stored["low"], stored["high"], stored.get("log", False), stored.get("step", 1))
    if kind == "categorical":
        from ._study import _choice_key, _hashable
        originals = originals or {}
        return CategoricalDistribution([originals.get(_choice_key(c), c) if _hashable(c) else c
                                        for c in stored["choices"]])
    return stored


def _check_params(call, params, distributions):
    """Error (naming `call`) unless params and distributions name the same parameters and each value is one
    its distribution may draw: what create_trial and add_trial take."""
    if set(params) != set(distributions):
        raise _error(f"{call}: params {sorted(params, key=repr)} and distributions {sorted(distributions, key=repr)} "
                     "must name the same parameters")
    for name, d in distributions.items():
        if not isinstance(d, BaseDistribution):
            raise _error(f"{call}: distributions['{name}'] {d!r}: must be a paratune.distributions object")
        if not d._contains(params[name]):
            raise _error(f"{call}: params['{name}'] {params[name]!r}: not in its distribution {d!r}")
