"""paratune.trial: TrialState, and the Trial and FrozenTrial of create_study's studies, where Optuna keeps them
(optuna.trial), so that ported code changes only its import."""

import enum as _enum


class TrialState(_enum.Enum):
    """How a trial stands (Optuna's TrialState): RUNNING, COMPLETE, PRUNED or FAIL (failed, out of memory or
    interrupted: FrozenTrial.status says which). A member equals Optuna's member of the same name, so that
    ported code that still imports optuna.trial.TrialState compares and filters as it did."""

    RUNNING = 0
    COMPLETE = 1
    PRUNED = 2
    FAIL = 3

    def is_finished(self):
        """Whether the trial has ended (any state but RUNNING)."""
        return self != TrialState.RUNNING

    def __eq__(self, other):
        if isinstance(other, TrialState):
            return self is other
        return same_member_name(self, other, "TrialState")

    def __hash__(self):
        return hash(self.name)  # as Enum's, and as Optuna's member of the same name


def same_member_name(member, other, enum_name):
    """Whether `other` is a member of another library's enum called `enum_name` (Optuna's) with `member`'s name;
    NotImplemented when it is not such a member."""
    if isinstance(other, _enum.Enum) and type(other).__name__ == enum_name:
        return member.name == other.name
    return NotImplemented


def __getattr__(name):
    # Trial and FrozenTrial live in _study.py, which imports this module: read from there when asked.
    if name in ("Trial", "FrozenTrial"):
        from . import _study
        return {"Trial": _study.LiveTrial, "FrozenTrial": _study.FrozenTrial}[name]
    raise AttributeError(f"module 'paratune.trial' has no attribute {name!r}")
