"""The package as an index shows it and as a user installs it: licence, classifiers, URLs, and an sdist that
carries no test suite it cannot run (the tests need the repository's fixtures, goldens and sample logs)."""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("packaging")
"""One worker: the tests of the built package share one build of ROOT (two workers' builds raced on ROOT's
sdist folder: "No such file or directory: 'sigmaudit-0.2.0/sigmaudit/views/check.py'", a 3.12 CI run)."""
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_licence_is_an_spdx_expression_with_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_classifiers_name_every_python_the_suite_runs_on():
    project = PYPROJECT["project"]
    assert project["requires-python"] == ">=3.11"
    python = "Programming Language :: Python :: 3."
    versions = {c.rsplit(":: ", 1)[1] for c in project["classifiers"] if c.startswith(python)}
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert versions == {"3.11", "3.12", "3.13"}
    for version in versions:
        assert f'"{version}"' in workflow, f"the GitHub workflow does not run Python {version}"
    assert set(project["urls"]) >= {"Homepage", "Documentation", "Source"}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    pytest.importorskip("build")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0 and "Could not find a version that satisfies" in done.stdout + done.stderr:
        pytest.skip("no package index to fetch the build backend from")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


def test_the_wheel_declares_what_an_index_shows(built):
    wheel = next(built.glob("sigmaudit-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = email.message_from_string(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    assert meta["License-Expression"] == "MIT"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "Programming Language :: Python :: 3.13" in meta.get_all("Classifier")
    assert {u.split(",")[0] for u in meta.get_all("Project-URL")} >= {"Homepage", "Documentation", "Source"}
    assert not any(n.startswith(("tests/", "sample_logs/")) for n in names)


def test_the_sdist_carries_no_tests_it_cannot_run(built):
    sdist = next(built.glob("sigmaudit-*.tar.gz"))
    with tarfile.open(sdist) as t:
        names = [n.split("/", 1)[1] for n in t.getnames() if "/" in n]
    assert "LICENSE" in names and "README.md" in names and "sigmaudit/core/silent.py" in names
    assert not [n for n in names if n.startswith("tests")], "the sdist holds tests without their fixtures"
