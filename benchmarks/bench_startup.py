"""Where the CPU of a small scan goes (issue 24 item 5: ``sigmaudit scan sample_logs/rollouts.parquet`` ≤ 0.8 s).

    python benchmarks/bench_startup.py --repeats 9                          # this checkout
    mkdir -p /tmp/before && git archive <rev> | tar -x -C /tmp/before
    python benchmarks/bench_startup.py --repeats 9 --before /tmp/before     # alternated with an older checkout
    python benchmarks/bench_startup.py --repeats 7 -- calc -p 0.05 -G 8     # another command

Prints (1) the whole process's user + sys CPU (``wait4``) of the command, runs alternated between checkouts,
median and least; (2) for this checkout, one process's stages in CPU seconds (``time.process_time``): the
imports the command cannot do without (the interpreter alone, numpy, polars, typer, rich: each in its own
fresh interpreter), and inside one run of the command the option parsing, the load, the audit (of which the
prior fit), the view and the render. Each checkout runs with ``PYTHONPATH`` set and ``-P`` (an editable
install of another checkout cannot be timed by mistake) and its bytecode written once before timing.
The machine is shared: compare the medians of alternated runs, and the CPU, not wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
SAMPLE = str(HERE.parent / "sample_logs" / "rollouts.parquet")

STAGES = r"""
import contextlib, io, os, sys, time
T = {}
ORDER = ["imports (sigmaudit, numpy, polars, typer)", "load", "audit", "  of which the prior fit", "view",
         "render (Rich's import included)", "run", "total in process"]
def wrap(mod, name, label):
    f = getattr(mod, name)
    def timed(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            T[label] = T.get(label, 0.0) + time.process_time() - t
    setattr(mod, name, timed)
t0 = time.process_time()
try:  # the collector as the sigmaudit process tunes it (cli/startup.py), where the checkout has that
    from sigmaudit.cli import startup
    startup.begin()
except ImportError:
    pass
import sigmaudit.cli.app as app, sigmaudit.cli.inputs as inputs, sigmaudit.core.prior as prior
import sigmaudit.core.corpus as corpus, sigmaudit.audits.scan as scan
import sigmaudit.views as views, sigmaudit.render as render
T["imports (sigmaudit, numpy, polars, typer)"] = time.process_time() - t0
wrap(inputs, "load_inputs", "load"); wrap(prior, "fit_corpus_prior", "  of which the prior fit")
corpus.fit_corpus_prior = prior.fit_corpus_prior
wrap(scan, "audit", "audit"); wrap(views, "build_view", "view")
wrap(render, "render", "render (Rich's import included)")
t1 = time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    app.main(sys.argv[1:])
T["run"] = time.process_time() - t1
T["total in process"] = time.process_time()
for k in [k for k in ORDER if k in T]:
    print(f"{k}\t{T[k]:.4f}")
"""


def cpu(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """User + sys CPU seconds of one process."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return usage.ru_utime + usage.ru_stime


def env_for(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": str(checkout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("args", nargs="*", default=["scan", SAMPLE], help="the sigmaudit command (default: scan "
                                                                      "of the sample log)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--before", metavar="DIR", help="also run the command from the checkout DIR, alternated")
    a = ap.parse_args()
    checkouts = {"this": HERE.parent} | ({"before": Path(a.before).resolve()} if a.before else {})
    cmd = [PY, "-P", "-m", "sigmaudit", *a.args]
    runs: dict[str, list[float]] = {name: [] for name in checkouts}
    for path in checkouts.values():  # bytecode written once, not timed
        cpu(cmd, env_for(path))
    for r in range(a.repeats):
        for name in list(checkouts)[:: 1 if r % 2 == 0 else -1]:
            runs[name].append(cpu(cmd, env_for(checkouts[name])))
    print(f"sigmaudit {' '.join(a.args)}: user + sys CPU s, {a.repeats} alternated runs")
    for name, v in runs.items():
        print(f"  {name:7s} median {statistics.median(v):.3f}  least {min(v):.3f}  ({' '.join(f'{x:.2f}' for x in v)})")
    tuned = "import gc; gc.set_threshold(20000, 10, 10); "  # as during sigmaudit's start-up
    base = {"interpreter alone": "pass", "import numpy": tuned + "import numpy",
            "import polars": tuned + "import polars",
            "import typer": tuned + "import typer", "import rich.console, rich.table, rich.panel":
            tuned + "import rich.console, rich.table, rich.panel"}
    print("\nfloors, each in a fresh interpreter (collector as in sigmaudit's start-up), the interpreter's start "
          "included (median CPU s):")
    one = {"OPENBLAS_NUM_THREADS": "1"}
    for label, code in base.items():
        print(f"  {label:45s} {statistics.median(cpu([PY, '-P', '-c', code], os.environ | one) for _ in range(5)):.3f}")
    print("\nstages of one run in this checkout (CPU s, median of 5):")
    outs = [subprocess.run([PY, "-P", "-c", STAGES, *a.args], capture_output=True, text=True, check=True,
                           env=env_for(HERE.parent) | one).stdout for _ in range(5)]
    table: dict[str, list[float]] = {}
    for out in outs:
        for line in out.splitlines():
            k, v = line.split("\t")
            table.setdefault(k, []).append(float(v))
    for k, v in table.items():
        print(f"  {k:45s} {statistics.median(v):.3f}")


if __name__ == "__main__":
    main()
