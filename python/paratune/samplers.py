"""paratune.samplers: Optuna's sampler classes (optuna.samplers) as names of paratune's samplers, so that
``create_study(sampler=TPESampler(seed=1))`` ports unchanged. Each object carries the sampler's name, its seed
and its startup trials; paratune's engine runs the sampler (docs/hyperparameter-studies.md)."""

import warnings as _warnings

from ._core import Error


class BaseSampler:
    """A sampler for create_study: `name` (paratune's), `seed` (None: a random one) and `startup_trials` (the
    trials drawn from the prior before the model; -1: the sampler's default)."""

    name = ""
    # Optuna's settings whose effect paratune's sampler has already (no warning when given).
    _built_in = ()

    def __init__(self, seed=None, n_startup_trials=None, **settings):
        self.seed = seed
        self.startup_trials = -1 if n_startup_trials is None else n_startup_trials
        if settings.pop("constraints_func", None) is not None:
            raise Error(f"{type(self).__name__}: constraints_func is not supported by paratune's samplers; a "
                        "create_study objective may return NaN or raise for an infeasible trial (it fails, and the "
                        "sampler steers away from it)")
        ignored = sorted(k for k in settings if k not in self._built_in)
        if ignored:
            _warnings.warn(f"{type(self).__name__}: paratune's {self.name} sampler has its own settings; ignored: "
                           f"{', '.join(ignored)}", UserWarning, stacklevel=3)

    def __repr__(self):
        return f"{type(self).__name__}(seed={self.seed!r})"


class TPESampler(BaseSampler):
    """Optuna's TPESampler: paratune's TPE (multivariate over the parameters every trial asked for, with the
    constant liar for running trials: docs/porting-from-optuna.md). seed and n_startup_trials are honoured."""

    name = "tpe"
    _built_in = ("multivariate", "group", "constant_liar", "warn_independent_sampling", "consider_prior",
                 "prior_weight", "consider_magic_clip", "consider_endpoints")

    def __init__(self, *, seed=None, n_startup_trials=None, **settings):
        super().__init__(seed, n_startup_trials, **settings)


class RandomSampler(BaseSampler):
    """Optuna's RandomSampler: each parameter drawn from its prior."""

    name = "random"

    def __init__(self, seed=None):
        super().__init__(seed)


class GPSampler(BaseSampler):
    """Optuna's GPSampler: paratune's Gaussian-process sampler. seed and n_startup_trials are honoured."""

    name = "gp"
    _built_in = ("deterministic_objective",)

    def __init__(self, *, seed=None, n_startup_trials=None, **settings):
        super().__init__(seed, n_startup_trials, **settings)


class NSGAIISampler(BaseSampler):
    """Optuna's NSGAIISampler: paratune's NSGA-II, for several objectives. seed is honoured."""

    name = "nsga2"

    def __init__(self, *, seed=None, **settings):
        super().__init__(seed, None, **settings)


class CmaEsSampler(BaseSampler):
    """Optuna's CmaEsSampler: paratune's CMA-ES searches a space given in advance, so create_study refuses it;
    use paratune.tune(objective, space, sampler='cmaes')."""

    name = "cmaes"

    def __init__(self, *, seed=None, n_startup_trials=None, **settings):
        super().__init__(seed, n_startup_trials, **{k: v for k, v in settings.items() if k == "constraints_func"})


class GridSampler(BaseSampler):
    """Optuna's GridSampler: paratune's grid searches a space given in advance, so create_study refuses it; use
    paratune.tune(objective, space, sampler='grid')."""

    name = "grid"

    def __init__(self, search_space=None, seed=None):
        del search_space
        super().__init__(seed)
