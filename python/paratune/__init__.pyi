"""Type stubs of paratune's Python module (python/src/*.cc): what an editor completes and documents."""

import datetime
import os
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence

__version__: str

PathLike = str | os.PathLike[str]
ModelLike = Model | PathLike | Mapping[str, Any]
ClusterLike = Cluster | PathLike | Mapping[str, Any]
ConfigLike = str | Mapping[str, int | str | bool]
Constraints = str | Sequence[str] | Mapping[str, int | str | Sequence[int | str]]

class Error(ValueError):
    """Bad input: the message names the file, the field, the value and the rule (as the CLI's)."""

class TrialPruned(Exception):
    """Raise it from an objective to end its trial as pruned (after ``trial.should_prune()``)."""

class Model:
    """A model: a preset, a model-spec file, a Hugging Face config.json or a dict."""
    @property
    def name(self) -> str: ...
    def to_dict(self) -> dict[str, Any]:
        """The spec in paratune's model format."""
    def summary(self, seq_len: int) -> dict[str, Any]:
        """Parameters, FLOPs per token and layer counts at this sequence length."""

class Cluster:
    """A cluster: PRESET:NODES, GPUxCOUNT, a cluster file or a dict."""
    @property
    def name(self) -> str: ...
    @property
    def num_gpus(self) -> int: ...
    @property
    def nodes(self) -> int: ...
    @property
    def gpus_per_node(self) -> int: ...
    @property
    def gpu(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...

class Estimate:
    """One configuration's predicted iteration (a model prediction, not a measurement)."""
    @property
    def config(self) -> str:
        """The resolved configuration ("dp=4,tp=2,pp=1,...")."""
    @property
    def iteration_time_s(self) -> float: ...
    @property
    def tokens_per_s(self) -> float: ...
    @property
    def mfu(self) -> float: ...
    @property
    def tflops_per_gpu(self) -> float: ...
    @property
    def bubble_fraction(self) -> float: ...
    @property
    def peak_memory_bytes(self) -> float: ...
    @property
    def memory_limit_bytes(self) -> float: ...
    @property
    def fits(self) -> bool: ...
    @property
    def reason(self) -> str:
        """Why it does not fit (empty when it fits)."""
    def to_dict(self) -> dict[str, Any]:
        """Everything ``paratune estimate --json`` prints, with ``predicted_by``."""

class Plan:
    """One ranked plan: a configuration and its predicted iteration (the figures are its estimate's)."""
    @property
    def config(self) -> str:
        """The configuration, every axis resolved ("dp=4,tp=2,pp=1,...")."""
    @property
    def iteration_time_s(self) -> float:
        """Predicted seconds per training iteration."""
    @property
    def tokens_per_s(self) -> float:
        """Predicted training tokens per second, the whole cluster."""
    @property
    def mfu(self) -> float:
        """Predicted model FLOPs utilization (0 to 1)."""
    @property
    def tflops_per_gpu(self) -> float: ...
    @property
    def bubble_fraction(self) -> float: ...
    @property
    def peak_memory_bytes(self) -> float:
        """Predicted peak memory of the fullest GPU."""
    @property
    def memory_limit_bytes(self) -> float:
        """The GPU's usable memory (its capacity less the margin)."""
    @property
    def fits(self) -> bool: ...
    @property
    def reason(self) -> str:
        """Why it does not fit (empty when it fits)."""
    @property
    def estimate(self) -> Estimate: ...
    def to_dict(self) -> dict[str, Any]: ...

class PlanResult:
    """What ``plan()`` found: the ranked plans, the baselines and the search's figures."""
    @property
    def plans(self) -> list[Plan]:
        """Fitting plans, best first."""
    @property
    def best(self) -> Plan | None: ...
    @property
    def advice(self) -> list[str]:
        """When nothing fits: what would help."""
    def to_dict(self) -> dict[str, Any]:
        """Everything ``paratune plan --json`` prints."""
    def to_html(self) -> str:
        """The report ``paratune plan --html`` writes: one self-contained HTML page."""
    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Plan: ...

class Simulation:
    """A configuration's iteration replayed event by event."""
    @property
    def iteration_time_s(self) -> float: ...
    @property
    def bubble_fraction(self) -> float: ...
    @property
    def config(self) -> str: ...
    @property
    def fits(self) -> bool:
        """Whether every stage's peak memory is within the GPU's usable memory (as estimate's fits)."""
    @property
    def tokens_per_s(self) -> float:
        """Training tokens per second, the whole cluster, at the replayed iteration time."""
    @property
    def peak_memory_bytes(self) -> float:
        """The replay's peak memory of the fullest stage (static and activations)."""
    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event: kind, lane, stage, peer, microbatch, chunk, start_s, end_s."""
    def to_dict(self) -> dict[str, Any]:
        """Everything ``paratune simulate --json`` prints."""
    def to_html(self) -> str:
        """The report ``paratune simulate --html`` writes: one self-contained HTML page."""
    def chrome_trace(self) -> dict[str, Any]:
        """The timeline in Chrome's trace format (chrome://tracing, Perfetto)."""

class Launch:
    """A framework's launch settings for a plan; ``str()`` gives the text to paste."""
    @property
    def framework(self) -> str:
        """The framework and version it was checked against, e.g. "megatron@0.20.0-dev"."""
    @property
    def text(self) -> str: ...
    @property
    def cannot_express(self) -> list[str]:
        """Parts of the plan the framework has no setting for."""

class StoredTrial:
    """One trial of a stored study."""
    @property
    def number(self) -> int: ...
    @property
    def status(self) -> str:
        """running, completed, pruned, failed, oom, infeasible, timeout, interrupted or early-stopped."""
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def objective(self) -> float | None:
        """Hyperparameter studies: the final value (completed) or the last one (pruned)."""
    @property
    def throughput(self) -> float | None:
        """Steps per second, measured."""
    @property
    def duration_s(self) -> float | None:
        """Seconds from its start to its end; None while it runs."""
    @property
    def reason(self) -> str: ...
    @property
    def steps(self) -> int: ...
    @property
    def started_unix_s(self) -> float: ...
    @property
    def ended_unix_s(self) -> float: ...
    @property
    def location(self) -> str: ...
    @property
    def worker(self) -> str: ...
    @property
    def metrics(self) -> list[dict[str, Any]]:
        """Every metric it reported, in order: dicts of name, value, step."""
    def values(self, name: str) -> list[tuple[int | None, float]]:
        """One metric's (step, value) pairs: a learning curve."""
    def to_dict(self) -> dict[str, Any]: ...

class Study:
    """A stored study, read when opened (open it again to see later trials)."""
    @property
    def name(self) -> str: ...
    @property
    def storage(self) -> str:
        """The SQLite file, or the PostgreSQL URI with its password masked."""
    @property
    def kind(self) -> Literal["hpo", "configurations"]: ...
    @property
    def objective(self) -> str: ...
    @property
    def direction(self) -> Literal["minimize", "maximize"]: ...
    @property
    def directions(self) -> list[Literal["minimize", "maximize"]]:
        """Each objective's direction, in order (one for a study of one objective)."""
    @property
    def identity(self) -> dict[str, Any]:
        """What the study was created with (space, objective, pruner, ...)."""
    @property
    def trials(self) -> list[StoredTrial]: ...
    @property
    def best(self) -> StoredTrial | None:
        """The best completed trial, or None."""
    @property
    def best_trial(self) -> StoredTrial | None:
        """The same as best (Optuna's name)."""
    @property
    def best_trials(self) -> list[StoredTrial]:
        """A study of several objectives: its Pareto front, best first by the first objective; [] otherwise."""
    @property
    def best_params(self) -> dict[str, Any] | None: ...
    @property
    def best_value(self) -> float | None: ...
    def to_dict(self) -> dict[str, Any]:
        """Everything ``paratune report`` draws: trials, curves, importance, the fitted model."""
    def to_html(self) -> str:
        """The report ``paratune report --html`` writes, of the study as stored now: one self-contained HTML page."""
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[StoredTrial]: ...

class Trial:
    """One trial of ``tune()``: its configuration, and what it reports. Valid only inside its objective call:
    afterwards (kept in a list, or used by a thread that outlives the call) every call but ``number`` and
    ``params`` raises ``paratune.Error``."""
    @property
    def number(self) -> int:
        """The trial's number in the study (1, 2, ...)."""
    @property
    def params(self) -> dict[str, Any]:
        """Every active parameter of its configuration."""
    def suggest_float(self, name: str, low: float | None = None, high: float | None = None, *,
                      log: bool | None = None) -> float:
        """The trial's value of a float parameter of the space (bounds, when given, must be the space's)."""
    def suggest_int(self, name: str, low: int | None = None, high: int | None = None, *,
                    log: bool | None = None) -> int:
        """The trial's value of an int parameter of the space (bounds, when given, must be the space's)."""
    def suggest_categorical(self, name: str, choices: Sequence[Any] | None = None) -> Any:
        """The trial's value of a categorical parameter (choices, when given, must be the space's)."""
    def report(self, value: float, step: int) -> None:
        """The objective's value after a step (0-based, in any order): the curve the pruner judges."""
    def report_metric(self, name: str, value: float, step: int | None = None) -> None:
        """Another metric, stored with the trial (not judged)."""
    def should_prune(self) -> bool:
        """Whether the pruner stops the trial now; then raise ``paratune.TrialPruned``."""

class FrozenTrial:
    """A trial of a LiveStudy as stored (Optuna's FrozenTrial). ``value`` is None unless it completed;
    RuntimeError in a study of several objectives (``values`` has each). ``number`` counts from 0 (Optuna's);
    ``trial_id`` is the number paratune's reports show (number + 1)."""
    number: int
    state: Any  # paratune.trial.TrialState
    status: str
    reason: str
    params: dict[str, Any]
    distributions: dict[str, Any]  # paratune.distributions objects
    user_attrs: dict[str, Any]
    system_attrs: dict[str, Any]
    intermediate_values: dict[int, float]
    datetime_start: datetime.datetime
    datetime_complete: datetime.datetime | None
    @property
    def trial_id(self) -> int: ...
    @property
    def value(self) -> float | None: ...
    @property
    def values(self) -> list[float] | None: ...
    @property
    def duration(self) -> datetime.timedelta | None: ...
    @property
    def last_step(self) -> int | None: ...
    # Optuna's FrozenTrial is a trial for the objective again: suggest_* give the stored values.
    def suggest_float(self, name: str, low: float, high: float, *, step: float | None = None,
                      log: bool = False) -> float: ...
    def suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int: ...
    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any: ...
    def report(self, value: float, step: int) -> None: ...
    def should_prune(self) -> bool: ...
    def set_user_attr(self, key: str, value: Any) -> None: ...

class LiveTrial:
    """A running trial of a LiveStudy (Optuna's Trial): parameters defined by the run. Once told, every call
    raises ``paratune.Error``."""
    number: int
    study: LiveStudy
    params: dict[str, Any]
    user_attrs: dict[str, Any]
    datetime_start: datetime.datetime
    @property
    def trial_id(self) -> int: ...
    def suggest_float(self, name: str, low: float, high: float, *, step: float | None = None,
                      log: bool = False) -> float: ...
    def suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int: ...
    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any:
        """One of choices (None, bools, numbers, strings, any hashable): the very object listed."""
    def suggest_uniform(self, name: str, low: float, high: float) -> float: ...
    def suggest_loguniform(self, name: str, low: float, high: float) -> float: ...
    def suggest_discrete_uniform(self, name: str, low: float, high: float, q: float) -> float: ...
    def report(self, value: float, step: int) -> None: ...
    def report_metric(self, name: str, value: float, step: int | None = None) -> None: ...
    def should_prune(self) -> bool: ...
    def set_user_attr(self, key: str, value: Any) -> None: ...

class LiveStudy:
    """A study open for trials (Optuna's Study), from ``create_study`` or ``load_study``."""
    @property
    def study_name(self) -> str: ...
    @property
    def direction(self) -> Any:  # paratune.study.StudyDirection (also the text 'minimize' / 'maximize')
        """RuntimeError in a study of several objectives: see directions."""
    @property
    def directions(self) -> list[Any]: ...  # paratune.study.StudyDirection
    @property
    def storage(self) -> str: ...
    @property
    def user_attrs(self) -> dict[str, Any]: ...
    @property
    def trials(self) -> list[FrozenTrial]: ...
    @property
    def best_trial(self) -> FrozenTrial: ...
    @property
    def best_params(self) -> dict[str, Any]: ...
    @property
    def best_value(self) -> float: ...
    @property
    def best_trials(self) -> list[FrozenTrial]:
        """The Pareto front of a study of several objectives, in number order."""
    def set_user_attr(self, key: str, value: Any) -> None: ...
    def get_trials(self, deepcopy: bool = True, states: Sequence[Any] | None = None) -> list[FrozenTrial]: ...
    def enqueue_trial(self, params: Mapping[str, Any], user_attrs: Mapping[str, Any] | None = None,
                      skip_if_exists: bool = False) -> None: ...
    def add_trial(self, trial: FrozenTrial) -> None:
        """A finished trial (paratune.trial.create_trial, or another study's) stored as this study's next."""
    def add_trials(self, trials: Sequence[FrozenTrial]) -> None: ...
    def stop(self) -> None: ...
    def ask(self) -> LiveTrial: ...
    def tell(self, trial: LiveTrial | int, values: float | Sequence[float] | None = None, state: Any = None,
             skip_if_finished: bool = False) -> FrozenTrial: ...
    def optimize(self, func: Callable[[LiveTrial], float | Sequence[float] | None], n_trials: int | None = None,
                 timeout: float | None = None, n_jobs: int = 1,
                 catch: Sequence[type[BaseException]] | type[BaseException] = (),
                 callbacks: Sequence[Callable[[LiveStudy, FrozenTrial], None]] | None = None,
                 gc_after_trial: bool = False, show_progress_bar: bool = False) -> None: ...
    def trials_dataframe(self, attrs: Sequence[str] = ("number", "value", "datetime_start", "datetime_complete",
                                                       "duration", "params", "user_attrs", "state")) -> Any:
        """A pandas DataFrame of the trials (needs pandas)."""

def create_study(storage: PathLike | None = None, sampler: Literal["tpe", "gp", "random", "nsga2"] | Any | None = None,
                 pruner: Literal["median", "percentile", "asha", "hyperband", "none"] | Any | None = None,
                 study_name: str | None = None,
                 direction: Literal["minimize", "maximize"] | None = None, load_if_exists: bool = False, *,
                 seed: int | None = None, sampler_options: Mapping[str, int] | None = None,
                 pruner_options: Mapping[str, float] | None = None, steps: int = 0,
                 directions: Sequence[Literal["minimize", "maximize"]] | None = None) -> LiveStudy:
    """A study whose space is defined by its runs (Optuna's create_study); storage None or ':memory:' keeps it
    in a temporary file removed with the study object. directions: one per objective, for several."""

def load_study(study_name: str | None, storage: PathLike, sampler: Literal["tpe", "gp", "random", "nsga2"] | Any | None = None,
               pruner: Literal["median", "percentile", "asha", "hyperband", "none"] | Any | None = None, *,
               seed: int | None = None, sampler_options: Mapping[str, int] | None = None,
               pruner_options: Mapping[str, float] | None = None) -> LiveStudy:
    """A study create_study made, to run more trials or read them (Optuna's load_study)."""

def create_trial(*, state: Any = ..., value: float | None = None, values: Sequence[float] | None = None,
                 params: Mapping[str, Any] | None = None, distributions: Mapping[str, Any] | None = None,
                 user_attrs: Mapping[str, Any] | None = None, system_attrs: Mapping[str, Any] | None = None,
                 intermediate_values: Mapping[int, float] | None = None) -> FrozenTrial:
    """A finished trial made by hand, for LiveStudy.add_trial (Optuna's create_trial)."""

def delete_study(study_name: str, storage: PathLike) -> None:
    """Deletes the study with every trial (Optuna's delete_study)."""

def copy_study(from_study_name: str, from_storage: PathLike, to_storage: PathLike,
               to_study_name: str | None = None) -> None:
    """Copies the study with every trial into to_storage, as to_study_name when given (Optuna's copy_study)."""

def get_all_study_summaries(storage: PathLike, include_best_trial: bool = True) -> list[Any]:
    """Each study in storage, summarized (Optuna's get_all_study_summaries): paratune.study.StudySummary."""

def load_model(model: ModelLike) -> Model:
    """A model from a preset name, a model-spec file (YAML/JSON), a Hugging Face config.json, or a dict."""

def load_cluster(cluster: ClusterLike) -> Cluster:
    """A cluster from "dgx-h100:16" (preset:nodes), "h100x128" (GPU x count), a cluster file, or a dict."""

def presets() -> dict[str, list[str]]:
    """The names of the shipped model, GPU and cluster presets."""

def estimate(model: ModelLike, cluster: ClusterLike, config: ConfigLike, seq_len: int, global_batch: int, *,
             precision: str = "bf16", fp8_recipe: str = "delayed", fp8_param_gather: bool = False,
             moe_balancing: str = "aux-loss", moe_capacity_factor: float = 0.0, optimizer: str = "adamw",
             flash_attention: bool = True, memory_margin: float = 0.05,
             calibration: PathLike | None = None, profile: PathLike | None = None) -> Estimate:
    """The predicted time, throughput and memory of one configuration (``paratune estimate``)."""

def plan(model: ModelLike, cluster: ClusterLike, seq_len: int, global_batch: int, *, top: int = 5, keep: int = 16,
         threads: int = 1, fix: Constraints | None = None, allow: Constraints | None = None,
         max: Constraints | None = None, framework: str | None = "any", baselines: bool = True,
         precision: str = "bf16", fp8_recipe: str = "delayed", fp8_param_gather: bool = False,
         moe_balancing: str = "aux-loss", moe_capacity_factor: float = 0.0, optimizer: str = "adamw",
         flash_attention: bool = True, memory_margin: float = 0.05,
         calibration: PathLike | None = None, profile: PathLike | None = None) -> PlanResult:
    """The fastest configurations that fit (``paratune plan``). Releases the GIL while it searches.

    ``framework``: "any" (or None) ranks only plans one of Megatron-LM, torchtitan and DeepSpeed runs as planned;
    "megatron", "torchtitan" or "deepspeed" (optionally "@VERSION") only what that one runs; "none" the
    whole space."""

def simulate(model: ModelLike, cluster: ClusterLike, config: ConfigLike, seq_len: int, global_batch: int, *,
             schedule: str | None = None, grad_sync: str | None = None, precision: str = "bf16",
             fp8_recipe: str = "delayed", fp8_param_gather: bool = False, moe_balancing: str = "aux-loss",
             moe_capacity_factor: float = 0.0, optimizer: str = "adamw", flash_attention: bool = True,
             memory_margin: float = 0.05, calibration: PathLike | None = None,
             profile: PathLike | None = None) -> Simulation:
    """Replays one iteration's pipeline schedule event by event (``paratune simulate``)."""

def launch_args(plan: Plan | PlanResult | Estimate, framework: str, *, allow_unsupported: bool = False) -> Launch:
    """The launch for "megatron", "torchtitan" or "deepspeed" (optionally "@VERSION"), checked against that
    version's flags and rules. A plan the framework cannot run as planned raises Error with the reasons
    (plan(..., framework=) searches only what it can run), unless allow_unsupported=True: then its nearest
    launch, what differs in .cannot_express."""

def open_study(storage: PathLike, name: str = "") -> Study:
    """A stored study: an SQLite file or a postgresql:// URI; name may be left out when the store holds one."""

def studies(storage: PathLike) -> list[str]:
    """The names of the studies in a store."""

def tune(objective: Callable[[Trial], float | None], space: Mapping[str, Any] | PathLike | None = None, *,
         storage: PathLike | None = None,
         study_name: str = "main", direction: Literal["minimize", "maximize"] = "minimize",
         objective_name: str = "value", sampler: Literal["grid", "random", "tpe", "gp", "cmaes"] = "tpe",
         pruner: Literal["none", "median", "percentile"] = "median", max_trials: int = 0, timeout: float = 0.0,
         n_jobs: int = 1, seed: int = 0, steps: int = 0, sampler_options: Mapping[str, Any] = ...,
         pruner_options: Mapping[str, Any] = ...) -> Study:
    """Runs (or resumes) a hyperparameter study whose trials call ``objective(trial)``; returns the stored Study.

    storage: an SQLite file or a postgresql:// URI; None or ":memory:" (Optuna's in-memory storage): the
    study lives as long as the Study returned (a temporary file, removed with it).
    space: a dict in the space file's format ({"lr": {"type": "float", "low": 1e-4, "high": 0.1, "log": True},
    "optimizer": ["sgd", "adam"]}, optionally under "parameters" with "constraints"), or a space file. None: the
    objective's own suggestions (each with its bounds or choices), read from one call that ends at its first
    report or return -- or, when the study resumes, the space it was stored with.
    max_trials counts the study's trials in all, those of earlier runs included (as ``--max-trials``);
    timeout: no new trial after so many seconds. n_jobs: objectives called from that many threads.
    sampler_options: startup_trials. pruner_options: startup_trials, warmup_steps, percentile.

    How a call ends decides what is stored: a number -- completed; None -- completed with its last reported
    value; TrialPruned (paratune's, or any class of that name: Optuna's) -- pruned; MemoryError or an *OutOfMemoryError (torch's) -- oom; any other exception,
    a NaN or infinite report included -- failed with "Type: message", and the study goes on; KeyboardInterrupt
    -- interrupted, and tune() re-raises it (the configuration is asked again first on resume). A trial that
    suggests a parameter the space does not have, or with other bounds, fails and tune() raises that error.
    Each trial is logged on the "paratune" logger (INFO; failures WARNING): its number, how it ended, its value,
    its parameters and the best trial so far. A trial is valid only inside its call (kept, it raises Error).
    """
