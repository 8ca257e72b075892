"""paratune.exceptions: where Optuna keeps TrialPruned (optuna.exceptions), so that ported code changes only its
import. Any exception class named TrialPruned counts as pruned, Optuna's own included."""

from ._core import Error, TrialPruned  # noqa: F401 -- re-exported

OptunaError = Error  # the base of the errors of bad input, as optuna.exceptions.OptunaError
