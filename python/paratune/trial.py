"""paratune.trial.TrialState: how a trial of create_study's study stands, where Optuna keeps it
(optuna.trial.TrialState), so that ported code changes only its import."""

import enum as _enum


class TrialState(_enum.Enum):
    """How a trial stands (Optuna's TrialState): RUNNING, COMPLETE, PRUNED or FAIL (failed, out of memory or
    interrupted: FrozenTrial.status says which)."""

    RUNNING = 0
    COMPLETE = 1
    PRUNED = 2
    FAIL = 3

    def is_finished(self):
        """Whether the trial has ended (any state but RUNNING)."""
        return self != TrialState.RUNNING
