"""paratune.importance: which parameters mattered, where Optuna keeps get_param_importances
(optuna.importance), so that ported code changes only its import."""

from collections import OrderedDict as _OrderedDict


def get_param_importances(study, *, evaluator=None, params=None, target=None, normalize=True):
    """get_param_importances(study: LiveStudy, *, evaluator: None = None, params: list[str] | None = None, target: None = None, normalize: bool = True) -> dict[str, float]

    Each parameter's importance to the objective over the study's completed trials, most important first
    (Optuna's get_param_importances). It is the study reports' measure (paratune study show, the HTML
    report): each parameter's first-order share of the objective's variance, corrected for the number of
    groups its values fall into (epsilon squared; include/paratune/hpo/importance.h), estimated from the
    trials themselves -- Optuna's default is fANOVA's random forest. Every parameter of the completed trials
    is listed; one the measure leaves out (a single value, or asked as two types) as 0. normalize: scaled
    to sum to 1 (all 0 when none explains any variance); params: only these (named in the study). evaluator and target
    (Optuna's choice of estimator and of the value judged) are not offered: the study's objective is
    judged, so a study of several objectives is refused. paratune.Error with fewer completed trials than
    the measure needs."""
    from ._core import Error, open_study
    if evaluator is not None:
        raise Error(f"get_param_importances: evaluator {evaluator!r}: paratune has one measure (the share of "
                    "variance its reports show); leave evaluator out")
    if target is not None:
        raise Error("get_param_importances: target: paratune judges the study's objective; leave target out")
    if len(study.directions) > 1:
        raise Error(f"get_param_importances: study '{study.study_name}' has several objectives: paratune judges "
                    "one objective's variance")
    if params is not None and (isinstance(params, (str, bytes)) or not hasattr(params, "__iter__")):
        raise Error(f"get_param_importances: params {params!r}: must be a list of parameter names")
    completed = [t for t in study.trials if t.state.name == "COMPLETE"]
    names = list(dict.fromkeys(name for t in completed for name in t.params))  # in the order first asked
    data = open_study(study._storage, study.study_name).to_dict()
    # A share the measure cannot give (values so large their variance overflows) counts as unmeasured.
    measured = {row["parameter"]: row["share"] for row in data.get("importance", [])
                if isinstance(row.get("share"), (int, float)) and row["share"] == row["share"]}
    if not measured:
        raise Error(f"get_param_importances: study '{study.study_name}': {len(completed)} completed trial(s) are "
                    "too few to measure importance (each parameter needs 2 trials per group of its values)")
    if params is not None:
        params = list(params)
        unknown = [p for p in params if p not in names]
        if unknown:
            raise Error(f"get_param_importances: params {unknown!r}: not parameters of study "
                        f"'{study.study_name}' (its completed trials have: {', '.join(names)})")
        names = params
    # Every parameter: one the measure leaves out (a single value, or asked as two types) explains nothing
    # it can tell apart, 0.
    shares = {name: float(measured.get(name, 0.0)) for name in names}
    total = sum(shares.values())
    if normalize and total > 0:
        shares = {p: v / total for p, v in shares.items()}
    return _OrderedDict(sorted(shares.items(), key=lambda kv: -kv[1]))
