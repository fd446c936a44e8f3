"""Fixtures shared by several test files, and the grouping that keeps them shared under pytest-xdist.

The suite runs on two workers (``-n 2`` in pyproject.toml, ``--dist loadgroup``): every test that
needs the local Spark session is sent to one worker (group ``spark``), so a run starts one JVM.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import warnings

# numpy's OpenBLAS on one thread, as the sigmaudit command runs it (sigmaudit.cli.run), unless set: the suite
# calls the CLI in-process, and two workers each running OpenBLAS threads on two cores spent a third more CPU
# in the prior fits. Set here, before anything imports numpy (the workers inherit it).
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest


@pytest.fixture(scope="session")
def spark_engine():
    """The local session every Spark test shares, also serving Spark Connect on a free port (for
    --spark-remote), started with the engine's own settings (one per run: a JVM takes seconds to start,
    and a second ``getOrCreate`` would return the first session, without the Connect plugin)."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no Java for a local Spark session")
    with warnings.catch_warnings():  # PySpark's notice about the pandas version
        warnings.simplefilter("ignore")
        from pyspark.sql import SparkSession

    from sigmaudit.loaders.engines import get_engine
    from sigmaudit.loaders.engines.spark import LOCAL_CONF

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    builder = SparkSession.builder.master("local[*]").appName("sigmaudit-tests")
    for key, value in {**LOCAL_CONF, "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
                       "spark.connect.grpc.binding.port": str(port)}.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():  # PySpark's notice about the pandas version, on first use
        warnings.simplefilter("ignore")
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    engine = get_engine("spark")
    engine.connect_url = f"sc://localhost:{port}"
    yield engine
    if "pyspark.sql.connect.session" in sys.modules:  # close Connect clients first: they retry for minutes
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        client = ConnectSession.getActiveSession() or getattr(ConnectSession, "_default_session", None)
        if client is not None:
            client.stop()
    session.stop()


def _uses_spark(item: pytest.Item) -> bool:
    """A test that runs a Spark session: it asks for ``spark_engine``, or is the ``spark`` case of a test
    parametrised over engines (which asks for the fixture by name)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return "spark_engine" in getattr(item, "fixturenames", ()) or params.get("engine") == "spark"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _uses_spark(item):
            item.add_marker(pytest.mark.xdist_group("spark"))
