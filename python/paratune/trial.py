"""paratune.trial: TrialState, and the Trial and FrozenTrial of create_study's studies, where Optuna keeps them
(optuna.trial), so that ported code changes only its import."""

import enum as _enum


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
