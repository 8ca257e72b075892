"""paratune.pruners: Optuna's pruner classes (optuna.pruners) as names of paratune's pruners with their
settings, so that ``create_study(pruner=MedianPruner(n_startup_trials=5))`` ports unchanged."""

import warnings as _warnings


class BasePruner:
    """A pruner for create_study: `name` (paratune's), `options` (its pruner_options) and `steps` (the steps of
    a full trial where the pruner states them: HyperbandPruner's max_resource; else None)."""

    name = ""

    def __init__(self, options=None, steps=None, ignored=()):
        self.options = dict(options or {})
        self.steps = steps
        if ignored:
            _warnings.warn(f"{type(self).__name__}: paratune's {self.name} pruner does not take "
                           f"{', '.join(ignored)}; ignored", UserWarning, stacklevel=3)

    def __repr__(self):
        return f"{type(self).__name__}({self.options!r})"


def _not_default(**given):
    """The names of the settings whose value is not Optuna's default (value, default)."""
    return [name for name, (value, default) in given.items() if value != default]


class MedianPruner(BasePruner):
    """Optuna's MedianPruner: stops a trial whose best value so far is worse than the median of the others' at
    the same step."""

    name = "median"

    def __init__(self, n_startup_trials=5, n_warmup_steps=0, interval_steps=1, *, n_min_trials=1):
        super().__init__({"startup_trials": n_startup_trials, "warmup_steps": n_warmup_steps},
                         ignored=_not_default(interval_steps=(interval_steps, 1), n_min_trials=(n_min_trials, 1)))


class PercentilePruner(BasePruner):
    """Optuna's PercentilePruner: as MedianPruner at another percentile."""

    name = "percentile"

    def __init__(self, percentile, n_startup_trials=5, n_warmup_steps=0, interval_steps=1, *, n_min_trials=1):
        super().__init__({"percentile": percentile, "startup_trials": n_startup_trials, "warmup_steps": n_warmup_steps},
                         ignored=_not_default(interval_steps=(interval_steps, 1), n_min_trials=(n_min_trials, 1)))


def _resource(value):
    """A min_resource/max_resource as given, or None for 'auto' (create_study checks the value)."""
    return None if value is None or value == "auto" else value


class SuccessiveHalvingPruner(BasePruner):
    """Optuna's SuccessiveHalvingPruner: paratune's ASHA (rungs at min_resource x reduction_factor^k);
    create_study needs steps= (a full trial's steps)."""

    name = "asha"

    def __init__(self, min_resource="auto", reduction_factor=4, min_early_stopping_rate=0, bootstrap_count=0):
        options = {"eta": reduction_factor}
        if _resource(min_resource) is not None:
            options["min_resource"] = min_resource
        super().__init__(options, ignored=_not_default(min_early_stopping_rate=(min_early_stopping_rate, 0),
                                                       bootstrap_count=(bootstrap_count, 0)))


class HyperbandPruner(BasePruner):
    """Optuna's HyperbandPruner: paratune's Hyperband over ASHA brackets; max_resource is a full trial's steps
    (or create_study's steps= with 'auto')."""

    name = "hyperband"

    def __init__(self, min_resource=1, max_resource="auto", reduction_factor=3, bootstrap_count=0):
        options = {"eta": reduction_factor}
        if _resource(min_resource) is not None:
            options["min_resource"] = min_resource
        super().__init__(options, steps=_resource(max_resource),
                         ignored=_not_default(bootstrap_count=(bootstrap_count, 0)))


class NopPruner(BasePruner):
    """Optuna's NopPruner: no trial is stopped early."""

    name = "none"

    def __init__(self):
        super().__init__()
