"""paratune.exceptions: where Optuna keeps TrialPruned (optuna.exceptions), so that ported code changes only its
import. Any exception class named TrialPruned counts as pruned, Optuna's own included."""

from ._core import Error, TrialPruned  # noqa: F401 -- re-exported

OptunaError = Error  # the base of the errors of bad input, as optuna.exceptions.OptunaError


class DuplicatedStudyError(Error):
    """create_study: the storage has a study of that name already (Optuna's DuplicatedStudyError); pass
    load_if_exists=True to go on with it."""


class StudyNotFoundError(Error, KeyError):
    """load_study: the storage has no study of that name. A KeyError, as Optuna raises there, and a
    paratune.Error (a ValueError) as every bad input is."""

    __str__ = Exception.__str__  # the message as it is (a KeyError's str() would quote it)


class ExperimentalWarning(UserWarning):
    """Optuna's warning class for experimental features; paratune raises none, ported filters may name it."""
