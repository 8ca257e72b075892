"""paratune: plan and tune the parallel training of large models.

The same library as the ``paratune`` program, in Python:

* ``load_model``, ``load_cluster``: presets, spec files, Hugging Face ``config.json`` files or dicts;
* ``estimate``, ``plan``, ``simulate``: the analytic cost model, the two-level planner and the
  event-by-event pipeline replay (every figure a model prediction, labelled so in ``to_dict()``);
* ``launch_args``: a plan's launch for Megatron-LM, torchtitan or DeepSpeed, checked against the
  framework version's flags;
* ``open_study``, ``studies``: stored studies (SQLite files, PostgreSQL), whoever ran them;
* ``tune``: a hyperparameter study whose trials call a Python function, Optuna-style.

Errors of bad input raise ``paratune.Error`` (a ``ValueError``) with the message the program prints:
the file, the field, the value and the rule.
"""

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

__all__ = [
    "Cluster", "Error", "Estimate", "Launch", "Model", "Plan", "PlanResult", "Simulation", "StoredTrial",
    "Study", "Trial", "TrialPruned", "__version__", "estimate", "launch_args", "load_cluster", "load_model",
    "open_study", "plan", "presets", "simulate", "studies", "tune",
]

Error.__doc__ = ("Bad input: the message names the file, the field, the value and the rule (the CLI's message, "
                 "its flags named as this module's arguments).")

# Shown as paratune.X (not paratune._core.X) in reprs, tracebacks and help().
for _name in __all__:
    _value = globals()[_name]
    if isinstance(_value, type):
        _value.__module__ = __name__
del _name, _value
