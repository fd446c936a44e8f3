#!/usr/bin/env bash
# Install the lowest versions pyproject.toml allows for each direct dependency (ci/lowest.txt, a pip
# constraints file: pip has no "lowest" resolution) in a throwaway venv, then run the fast tests there.
#   bash scripts/lowest_deps.sh [VENV_DIR]      (default: a fresh temporary folder)
# When a floor fails, raise it in pyproject.toml and ci/lowest.txt together.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$(mktemp -d)/venv}"
[ -x "$venv/bin/python" ] || python -m venv "$venv"
"$venv/bin/pip" install -q -c "$root/ci/lowest.txt" -e "$root[test]"
"$venv/bin/pip" list 2>/dev/null | grep -i -E "^(typer|rich|polars|pyarrow|numpy|scipy|matplotlib|zstandard) "
cd "$root"
"$venv/bin/python" -m pytest -q -x -p no:cacheprovider \
  tests/test_core_prior.py tests/test_core_prior_select.py tests/test_core_silent.py tests/test_core_sigma.py \
  tests/test_core_fidelity.py tests/test_core_group_size.py tests/test_scan.py tests/test_check.py tests/test_plan.py \
  tests/test_help.py tests/test_cli_inputs.py tests/test_loaders_layouts.py tests/test_loaders_inputs.py \
  tests/test_scan_golden.py tests/test_docs.py
