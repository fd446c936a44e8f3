"""The ``[trainers]`` extra's import for the real-trainer tests (tests/test_trainers_*.py).

Outside CI a missing trainer skips its tests with the command that installs it. In CI (``CI`` set, as
``.ci/run``'s machines set it) the README's test command installs the extra, so a trainer that does not
import is an error, never a skip: no test of a real trainer is skipped in CI. The one exception is a
trainer whose own package cannot be installed on this Python: verl 0.9.1 declares ``Requires-Python <3.13``
(pyproject's extra carries that marker), so on 3.13 its tests skip and say why.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

import pytest

PYTHON_BELOW = {"verl": (3, 13)}
"""verl 0.9.1's ``Requires-Python`` upper bound (its PyPI metadata: ``<3.13,>=3.10``)."""


def require(name: str) -> ModuleType:
    """Import the trainer ``name``, or skip (see the module docstring)."""
    bound = PYTHON_BELOW.get(name)
    if bound is not None and sys.version_info[:2] >= bound:
        pytest.skip(f"{name} 0.9.1 requires Python < {bound[0]}.{bound[1]} (its Requires-Python); its tests run "
                    f"on 3.11 and 3.12", allow_module_level=True)
    if os.environ.get("CI"):
        return __import__(name)
    return pytest.importorskip(name, reason="the [trainers] extra is not installed (pip install -e '.[trainers]')")
