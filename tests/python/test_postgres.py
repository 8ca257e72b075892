"""tune() and open_study() on PostgreSQL: a private server started here (initdb + pg_ctl on 127.0.0.1, as
tests/support/postgres_server.h does for the C++ tests), stopped and removed at the end."""

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap

import pytest

import paratune


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres():
    bins = sorted(d for d in glob.glob("/usr/lib/postgresql/*/bin") if os.path.exists(os.path.join(d, "initdb")))
    why = None
    if not bins:
        why = "no initdb in /usr/lib/postgresql/*/bin (Debian package postgresql)"
    elif os.geteuid() == 0 and subprocess.run(["id", "postgres"], capture_output=True).returncode != 0:
        why = "running as root, and there is no postgres user to run the server as"
    if why:
        if os.environ.get("PARATUNE_REQUIRE_SERVERS") == "1":
            pytest.fail(why)
        pytest.skip(why)
    bin_dir = bins[-1]
    root = tempfile.mkdtemp(prefix="paratune-pg-")
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(root, "postgres")
    data = os.path.join(root, "data")
    port = free_port()
    subprocess.run(as_user + [f"{bin_dir}/initdb", "-D", data, "-A", "trust", "-U", "postgres"], check=True,
                   capture_output=True)
    with open(os.path.join(data, "postgresql.conf"), "a") as conf:
        conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{root}'\nfsync = off\n")
    subprocess.run(as_user + [f"{bin_dir}/pg_ctl", "-D", data, "-l", os.path.join(root, "server.log"), "-w", "start"],
                   check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_user + [f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def test_a_python_study_on_postgresql(postgres):
    def objective(trial):
        x = trial.suggest_float("x")
        for step in range(5):
            trial.report((x - 0.3) ** 2 + 1.0 / (step + 1), step)
        return (x - 0.3) ** 2

    space = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
    study = paratune.tune(objective, space, storage=postgres, study_name="pg", max_trials=8, sampler="gp", seed=5)
    assert len(study) == 8 and study.storage.startswith("postgresql://")
    assert all(t.status in ("completed", "pruned") for t in study)
    assert paratune.studies(postgres) == ["pg"]
    reopened = paratune.open_study(postgres, "pg")
    assert reopened.best_value == study.best_value
    assert len(reopened.best.values("value")) == 5


def test_create_study_on_postgresql(postgres):
    """create_study's define-by-run study on PostgreSQL: a branch, a dependent bound, reloaded by load_study."""
    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        if x > 0.5:
            trial.suggest_int("depth", 1, 8)
        y = trial.suggest_float("y", 0.0, x + 0.1)
        trial.set_user_attr("x_plus_y", x + y)
        return (x - 0.3) ** 2 + y

    study = paratune.create_study(storage=postgres, study_name="optuna-shaped", seed=5)
    study.optimize(objective, n_trials=8)
    assert study.storage.startswith("postgresql://") and len(study.trials) == 8
    loaded = paratune.load_study("optuna-shaped", postgres)
    loaded.optimize(objective, n_trials=2)
    trials = loaded.trials
    assert len(trials) == 10 and all(t.state.name == "COMPLETE" for t in trials)
    assert all(("depth" in t.params) == (t.params["x"] > 0.5) for t in trials)
    assert all(t.user_attrs["x_plus_y"] == t.params["x"] + t.params["y"] for t in trials)
    assert loaded.best_value == min(t.value for t in trials)


def test_three_processes_run_one_study_on_postgresql(postgres):
    """Optuna's distributed optimization on an RDB: one script started three times on one PostgreSQL URL,
    each with load_study(create_study's study) and optimize. One study, numbered without gaps or repeats."""
    paratune.create_study(storage=postgres, study_name="shared", seed=1)
    script = textwrap.dedent(f"""
        import paratune
        study = paratune.load_study("shared", {postgres!r})
        study.optimize(lambda t: (t.suggest_float("x", -5, 5) - 1) ** 2, n_trials=8)
        """)
    workers = [subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for w in workers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    trials = paratune.load_study("shared", postgres).trials
    assert [t.number for t in trials] == list(range(24))
    assert {t.state.name for t in trials} == {"COMPLETE"}
    assert len({t.worker for t in paratune.open_study(postgres, "shared").trials}) == 3
