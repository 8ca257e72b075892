"""paratune: plan and tune the parallel training of large models.

The same library as the ``paratune`` program, in Python:

* ``load_model``, ``load_cluster``: presets, spec files, Hugging Face ``config.json`` files or dicts;
* ``estimate``, ``plan``, ``simulate``: the analytic cost model, the two-level planner and the
  event-by-event pipeline replay (every figure a model prediction, labelled so in ``to_dict()``);
* ``launch_args``: a plan's launch for Megatron-LM, torchtitan or DeepSpeed, checked against the
  framework version's flags;
* ``open_study``, ``studies``: stored studies (SQLite files, PostgreSQL), whoever ran them;
* ``tune``: a hyperparameter study whose trials call a Python function, over a space given in advance (or
  read from one call);
* ``create_study``, ``load_study``: Optuna's Study API (optimize, ask/tell, best_trial, trials_dataframe), the
  space defined by the run (docs/porting-from-optuna.md); Optuna's names where it keeps them:
  ``paratune.trial`` (Trial, FrozenTrial, TrialState, create_trial), ``paratune.study`` (StudyDirection,
  MaxTrialsCallback), ``paratune.distributions``, ``paratune.importance``, ``paratune.samplers``,
  ``paratune.pruners``, ``paratune.exceptions``, ``paratune.logging``.

Errors of bad input raise ``paratune.Error`` (a ``ValueError``) with the message the program prints:
the file, the field, the value and the rule.

``tune()`` logs one line per trial on the ``logging`` logger "paratune" (INFO; failures as WARNING),
shown on stderr unless the program configures logging itself, as Optuna does; quiet it with
``logging.getLogger("paratune").setLevel(logging.WARNING)``.
"""

import logging as _logging
import sys as _sys


def _running_the_measurer():
    """Whether this interpreter was started as ``python3 -m paratune.profile`` (the GPU measurer, also under
    torchrun), which needs PyTorch alone: on a GPU node whose Python has no build of paratune's compiled module,
    the package then imports without it, and only the measurer is there."""
    if not hasattr(_sys, "orig_argv"):  # Python < 3.10: sys.argv[0] is "-m" while -m imports the package
        return _sys.argv[:1] == ["-m"]
    argv = _sys.orig_argv
    return any(a == "-m" and b == "paratune.profile" for a, b in zip(argv, argv[1:]))


try:
    from ._core import (
        Cluster,
        Error,
        Estimate,
        Launch,
        Model,
        Plan,
        PlanResult,
        Simulation,
        StoredTrial,
        Study,
        Trial,
        TrialPruned,
        __version__,
        estimate,
        launch_args,
        load_cluster,
        load_model,
        open_study,
        plan,
        presets,
        simulate,
        studies,
        tune,
    )
except ImportError:
    if not _running_the_measurer():
        raise
    _core_loaded = False
else:
    _core_loaded = True

if _core_loaded:
    from ._study import (FrozenTrial, LiveStudy, LiveTrial, copy_study, create_study, delete_study,
                         get_all_study_summaries, load_study)
    # Where Optuna keeps its names (optuna.trial, optuna.study, ...): ported code changes only its import.
    from . import distributions, exceptions, importance, logging, pruners, samplers, study, trial  # noqa: F401
    from .trial import create_trial  # Optuna's top-level name too

    __all__ = [
        "Cluster", "Error", "Estimate", "Launch", "Model", "Plan", "PlanResult", "Simulation", "StoredTrial",
        "Study", "Trial", "TrialPruned", "__version__", "estimate", "launch_args", "load_cluster", "load_model",
        "open_study", "plan", "presets", "simulate", "studies", "tune",
        "FrozenTrial", "LiveStudy", "LiveTrial", "copy_study", "create_study", "create_trial", "delete_study",
        "get_all_study_summaries", "load_study",
    ]

    Error.__doc__ = ("Bad input: the message names the file, the field, the value and the rule (the CLI's message, "
                     "its flags named as this module's arguments).")

    # Shown as paratune.X (not paratune._core.X) in reprs, tracebacks and help().
    for _name in __all__:
        _value = globals()[_name]
        if isinstance(_value, type):
            _value.__module__ = __name__
    del _name, _value


    class _StderrHandler(_logging.StreamHandler):
        """Writes to sys.stderr as it is when a record comes (a program or a test may replace it)."""

        def __init__(self):
            _logging.Handler.__init__(self)

        @property
        def stream(self):
            return _sys.stderr


    class _UnlessLoggingIsConfigured(_logging.Filter):
        """Passes records only while the root logger has no handler: once the program configures logging
        (basicConfig, pytest's capture), its handlers show paratune's records and this one stays quiet, so no
        line is printed twice."""

        def filter(self, record):
            return not _logging.getLogger().handlers


    def _show_trials_by_default():
        """Optuna's default: a library logger at INFO with a stderr handler, so that tune() shows its trials
        without any setup. A level the program set before importing paratune is kept."""
        logger = _logging.getLogger(__name__)
        if logger.level == _logging.NOTSET:
            logger.setLevel(_logging.INFO)
        handler = _StderrHandler()
        handler.setFormatter(_logging.Formatter("[%(levelname)s %(asctime)s] %(name)s: %(message)s"))
        handler.addFilter(_UnlessLoggingIsConfigured())
        logger.addHandler(handler)


    _show_trials_by_default()
