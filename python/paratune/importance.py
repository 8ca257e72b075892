"""paratune.importance: which parameters mattered, where Optuna keeps get_param_importances
(optuna.importance), so that ported code changes only its import."""

from collections import OrderedDict as _OrderedDict


def get_param_importances(study, *, evaluator=None, params=None, target=None, normalize=True):
    """get_param_importances(study: LiveStudy, *, evaluator: None = None, params: list[str] | None = None, target: None = None, normalize: bool = True) -> dict[str, float]

    Each parameter's importance to the objective over the study's completed trials, most important first
    (Optuna's get_param_importances). It is the study reports' measure (paratune study show, the HTML
    report): each parameter's first-order share of the objective's variance, corrected for the number of
    groups its values fall into (epsilon squared; include/paratune/hpo/importance.h), estimated from the
    trials themselves -- Optuna's default is fANOVA's random forest. normalize: scaled to sum to 1 (all 0
    when none explains any variance); params: only these (named in the study). evaluator and target
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
    data = open_study(study._storage, study.study_name).to_dict()
    shares = {row["parameter"]: float(row["share"]) for row in data.get("importance", [])}
    if not shares:
        completed = sum(t.state.name == "COMPLETE" for t in study.trials)
        raise Error(f"get_param_importances: study '{study.study_name}': {completed} completed trial(s) are too "
                    "few to measure importance (each parameter needs 2 trials per group of its values)")
    if params is not None:
        params = list(params)
        unknown = [p for p in params if p not in data.get("parameters", {})]
        if unknown:
            raise Error(f"get_param_importances: params {unknown!r}: not parameters of study "
                        f"'{study.study_name}' (it has: {', '.join(data.get('parameters', {}))})")
        shares = {p: shares.get(p, 0.0) for p in params}
    total = sum(shares.values())
    if normalize and total > 0:
        shares = {p: v / total for p, v in shares.items()}
    return _OrderedDict(sorted(shares.items(), key=lambda kv: -kv[1]))
