"""The Python quick start runs as printed: in the README's tour and on the Python page of docs/."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.parametrize("page, marker", [("README.md", "**Python.**"), ("docs/python.md", "# Python: `import paratune`")])
def test_the_python_quick_start_runs(tmp_path, page, marker):
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    section = text[text.index(marker):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) == 5, "the quick start is five lines"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "--tensor-model-parallel-size" in done.stdout
    best = eval(done.stdout.strip().splitlines()[-1])  # the printed dict of the best parameters
    assert abs(best["x"] - 1.0) < 0.5
    assert (tmp_path / "python.db").exists()
