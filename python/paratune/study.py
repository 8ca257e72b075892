"""paratune.study: where Optuna keeps Study, StudyDirection, MaxTrialsCallback, create_study, load_study,
delete_study, copy_study, get_all_study_names, get_all_study_summaries and StudySummary (optuna.study), so that
ported code changes only its import."""

import enum as _enum
import numbers as _numbers

from .trial import TrialState, equal_by_name, not_equal


class StudyDirection(str, _enum.Enum):
    """A study's direction (Optuna's StudyDirection): MINIMIZE or MAXIMIZE. A member is also the text
    'minimize' or 'maximize', and equals Optuna's member of the same name."""

    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"

    def __eq__(self, other):
        return equal_by_name(self, other, "StudyDirection", str.__eq__)

    def __ne__(self, other):
        return not_equal(self.__eq__(other))

    # As the text it is (a dict keyed by 'minimize' finds it); Optuna's members hash as their int value,
    # so a set or dict does not mix the two (== does).
    __hash__ = str.__hash__

    def __str__(self):
        return self.value

    def __format__(self, spec):
        return format(self.value, spec)


class MaxTrialsCallback:
    """Optuna's MaxTrialsCallback: stops optimize() once the study holds n_trials trials in `states` (None: in
    any state) -- those of earlier runs and other study objects included."""

    def __init__(self, n_trials, states=(TrialState.COMPLETE,)):
        if isinstance(n_trials, bool) or not isinstance(n_trials, _numbers.Integral) or n_trials < 0:
            from ._core import Error
            raise Error(f"MaxTrialsCallback: n_trials {n_trials!r}: must be a whole number >= 0")
        self._n_trials = int(n_trials)
        self._states = None if states is None else tuple(states)

    def __call__(self, study, trial):
        del trial
        if len(study.get_trials(states=self._states)) >= self._n_trials:
            study.stop()


def __getattr__(name):
    # The study classes live in _study.py, which imports this module: read from there when asked.
    if name in ("Study", "create_study", "load_study", "StudySummary", "get_all_study_names",
                "get_all_study_summaries", "delete_study", "copy_study"):
        from . import _study
        return getattr(_study, "LiveStudy" if name == "Study" else name)
    raise AttributeError(f"module 'paratune.study' has no attribute {name!r}")
