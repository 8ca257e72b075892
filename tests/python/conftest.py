"""Shared by the Python module's tests (run by ctest: PYTHONPATH=BUILD/python, PARATUNE_BIN=BUILD/paratune)."""

import os
import subprocess

import pytest


@pytest.fixture
def cli():
    """Runs the paratune program; returns (exit code, stdout, stderr)."""
    binary = os.environ.get("PARATUNE_BIN")
    if not binary:
        pytest.fail("PARATUNE_BIN is not set: run these tests through ctest")

    def run(*args):
        done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)
        return done.returncode, done.stdout, done.stderr

    return run


@pytest.fixture
def examples():
    return os.path.join(os.path.dirname(__file__), "..", "..", "examples")
