"""Remote inputs: s3:// against a local S3-compatible server (moto), URL parsing for the other stores."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from cli_runner import run

from sigmaudit.errors import InputError
from sigmaudit.loaders import load_counts
from sigmaudit.loaders.paths import expand_paths
from sigmaudit.loaders.remote import is_remote, parse_url

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


def _logs(folder: Path) -> None:
    """A folder of one long log split in three: steps 1-8 parquet, 9-14 jsonl, 15-20 jsonl.gz, plus
    a README the loader must skip."""
    df = pl.read_parquet(SAMPLES / "rollouts.parquet")
    (folder / "part").mkdir(parents=True)
    df.filter(pl.col("step") <= 8).write_parquet(folder / "part" / "a.parquet")
    df.filter(pl.col("step").is_between(9, 14)).write_ndjson(folder / "b.jsonl")
    jsonl = df.filter(pl.col("step") >= 15).write_ndjson().encode()
    (folder / "c.jsonl.gz").write_bytes(gzip.compress(jsonl))
    (folder / "README.txt").write_text("not a log\n")


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory):
    """(local copy, bucket) with the same logs; a moto S3 server on 127.0.0.1 for the module."""
    boto3 = pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    local = tmp_path_factory.mktemp("logs")
    _logs(local)
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1")
    client.create_bucket(Bucket="bucket")
    for f in sorted(local.rglob("*")):
        if f.is_file():
            client.upload_file(str(f), "bucket", f"logs/{f.relative_to(local).as_posix()}")
    client.put_object(Bucket="bucket", Key="bad/broken.jsonl", Body=b'{"prompt_id": "a", "reward": 1}\n{"prompt_id":\n')
    try:
        yield local, "bucket"
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_s3_prefix_lists_supported_files_only(s3):
    assert expand_paths(["s3://bucket/logs/"]) == [
        "s3://bucket/logs/b.jsonl", "s3://bucket/logs/c.jsonl.gz", "s3://bucket/logs/part/a.parquet"]
    assert expand_paths(["s3://bucket/logs"]) == expand_paths(["s3://bucket/logs/"])
    assert expand_paths(["s3://bucket/logs/**/*.parquet"]) == ["s3://bucket/logs/part/a.parquet"]


def test_s3_scan_json_equals_local_copy(s3, capsys):
    local, _ = s3
    code, remote_out, remote_err = run(capsys, "scan", "s3://bucket/logs/", "-G", "8", "-f", "json")
    assert code == 0, remote_err
    code, local_out, _ = run(capsys, "scan", str(local), "-G", "8", "-f", "json")
    assert code == 0
    remote, here = json.loads(remote_out), json.loads(local_out)
    assert remote["files"] == here["files"] == 3
    assert remote["rows"] == 32000
    assert remote == here
    # and both equal the single-file original
    code, orig_out, _ = run(capsys, "scan", str(SAMPLES / "rollouts.parquet"), "-G", "8", "-f", "json")
    orig = json.loads(orig_out)
    assert {k: v for k, v in orig.items() if k not in ("files", "notes")} == {
        k: v for k, v in remote.items() if k not in ("files", "notes")}


def test_s3_glob_and_counts_match(s3):
    local, _ = s3
    remote = load_counts(["s3://bucket/logs/*.jsonl*"])
    here = load_counts([str(local / "b.jsonl"), str(local / "c.jsonl.gz")])
    assert remote.files == ("s3://bucket/logs/b.jsonl", "s3://bucket/logs/c.jsonl.gz")
    assert remote.per_prompt.equals(here.per_prompt)
    assert remote.per_group.equals(here.per_group)


@pytest.mark.parametrize(("url", "message"), [
    ("s3://bucket/nothing/", "prefix holds no supported files"),
    ("s3://bucket/logs/*.csv", "glob matches no supported files"),
    ("s3://bucket/missing.parquet", "no such object"),
    ("s3://bucket/bad/broken.jsonl", "malformed JSON on line 2"),
])
def test_s3_bad_inputs_one_line(s3, capsys, url, message):
    code, out, err = run(capsys, "scan", url)
    assert code == 2 and out == ""
    assert message in err and url.rstrip("/") in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("url", "store", "bucket", "key"), [
    ("s3://my-bucket/runs/a/*.parquet", "s3", "my-bucket", "runs/a/*.parquet"),
    ("s3a://b/k.jsonl", "s3", "b", "k.jsonl"),
    ("gs://lab-logs/grpo/", "gcs", "lab-logs", "grpo/"),
    ("gcs://lab-logs/x.parquet", "gcs", "lab-logs", "x.parquet"),
    ("az://container/dir/**/*.jsonl.zst", "azure", "container", "dir/**/*.jsonl.zst"),
    ("abfss://c@acct.dfs.core.windows.net/p/q.csv", "azure", "c@acct.dfs.core.windows.net", "p/q.csv"),
    ("hf://datasets/org/rollouts/data/train-*.parquet", "hf", "datasets/org/rollouts", "data/train-*.parquet"),
    ("https://example.org/logs/run1.jsonl", "http", "example.org", "logs/run1.jsonl"),
])
def test_url_parsing(url, store, bucket, key):
    assert is_remote(url)
    parsed = parse_url(url)
    assert (parsed.store, parsed.bucket, parsed.key) == (store, bucket, key)


@pytest.mark.parametrize(("url", "message"), [
    ("ftp://host/x.parquet", "unsupported URL scheme ftp://"),
    ("s3:///key.parquet", "without a bucket"),
    ("hf://org/rollouts/x.parquet", "hf://datasets/<owner>/<name>/<path>"),
    ("https://example.org/logs/", "cannot be listed"),
    ("https://example.org/logs/*.jsonl", "cannot be listed"),
])
def test_url_parsing_refuses(url, message):
    with pytest.raises(InputError) as info:
        parse_url(url)
    assert message in info.value.one_line()


@pytest.mark.parametrize("text", ["sample_logs/rollouts.parquet", "/tmp/x.jsonl", "C:\\logs\\x.csv", "logs/*.csv"])
def test_local_paths_are_not_remote(text):
    assert not is_remote(text)


def test_local_path_still_reads_after_copy(tmp_path):
    shutil.copy(SAMPLES / "counts.csv", tmp_path / "counts.csv")
    assert load_counts([tmp_path / "counts.csv"]).per_prompt.height == load_counts(
        [str(SAMPLES / "counts.csv")]).per_prompt.height


@pytest.mark.parametrize("log", ["areal", "nemo-rl", "open-instruct", "prime-rl", "roll", "skyrl", "trl"])
def test_s3_framework_dump_equals_local(s3, capsys, log):
    """A dump whose framework reader restructures each file is copied here under the same keys and read
    as the local copy: same JSON, same notes (with URLs for paths), side files skipped alike."""
    import boto3

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    for f in sorted((SAMPLES / log).rglob("*")):
        if f.is_file():
            client.upload_file(str(f), "bucket", f"dumps/{log}/{f.relative_to(SAMPLES / log).as_posix()}")
    code, out, err = run(capsys, "scan", f"s3://bucket/dumps/{log}/", "-G", "8", "-f", "json")
    assert code == 0, err
    want_code, want_out, want_err = run(capsys, "scan", str(SAMPLES / log), "-G", "8", "-f", "json")
    assert want_code == 0
    got, want = json.loads(out), json.loads(want_out)
    assert got["notes"] == [n.replace(str(SAMPLES / log), f"s3://bucket/dumps/{log}") for n in want["notes"]]
    assert {k: v for k, v in got.items() if k != "notes"} == {k: v for k, v in want.items() if k != "notes"}
    assert got["layout"] == want["layout"] != "long"


def test_s3_framework_dump_error_names_the_url(s3, capsys):
    import boto3

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    good = (SAMPLES / "nemo-rl" / "logs" / "exp_001" / "train_data_step1.jsonl").read_bytes()
    client.put_object(Bucket="bucket", Key="nemo/train_data_step1.jsonl", Body=good + b'{"content": [[\n')
    code, out, err = run(capsys, "scan", "s3://bucket/nemo/", "-G", "8")
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1
    assert "s3://bucket/nemo/train_data_step1.jsonl:" in err and "malformed JSON on line" in err
    assert "/objects/" not in err


@pytest.mark.parametrize("engine", ["duckdb"])
def test_s3_framework_dump_on_an_engine_is_refused_in_one_line(s3, capsys, engine):
    pytest.importorskip(engine)
    import boto3

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    for f in sorted((SAMPLES / "areal").rglob("*.jsonl"))[:3]:
        client.upload_file(str(f), "bucket", f"areal3/{f.relative_to(SAMPLES / 'areal').as_posix()}")
    code, out, err = run(capsys, "scan", "s3://bucket/areal3/", "--engine", engine)
    assert (code, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and "read with --engine polars only" in err


def test_s3_watch_polls_the_listing_and_reads_each_object_once(s3, capsys):
    """``watch`` on a prefix: objects appear whole (a store publishes an object at once), each is read
    when the listing first shows it, and the steps equal the local watch's."""
    import boto3

    from sigmaudit.loaders.follow import Follower

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    steps = sorted((SAMPLES / "verl" / "rollout_data").glob("*.jsonl"), key=lambda f: int(f.stem))
    for f in steps[:3]:
        client.upload_file(str(f), "bucket", f"live/{f.name}")
    with Follower(["s3://bucket/live/"]) as follower:
        first = follower.poll()
        assert (first.changed, follower.files_read, first.pending) == (True, 3, ())
        assert sorted(first.per_group["step"].unique().to_list()) == [1, 2, 3]
        assert (follower.poll().changed, follower.files_read) == (False, 3)
        client.upload_file(str(steps[3]), "bucket", f"live/{steps[3].name}")
        assert (follower.poll().changed, follower.files_read) == (True, 4)
    code, out, err = run(capsys, "watch", "s3://bucket/live/", "--once", "--interval", "0.01", "-f", "json", "-q")
    assert code == 0, err
    remote = [json.loads(line) for line in out.splitlines()]
    local_dir = SAMPLES.parent / "sample_logs" / "verl"
    code, out, _ = run(capsys, "watch", str(local_dir), "--once", "--interval", "0.01", "-f", "json", "-q")
    local = [json.loads(line) for line in out.splitlines()]
    assert [e.get("step") for e in remote[:-1]] == [1, 2, 3, 4]
    observed = ("step", "G", "observed", "window", "cumulative", "prompts")
    assert [{k: e[k] for k in observed} for e in remote[:-1]] == [{k: e[k] for k in observed} for e in local[:4]]
    assert [e["forecast"] is None for e in remote[:-1]] == [True, True, True, False]  # joined at step 4


def test_s3_watch_reads_an_object_uploaded_again(s3):
    """Issue 36 item 6: an object uploaded again with more steps (a synced growing log) was never re-read.
    Its new version holds every group of the old one: it replaces it (nothing counted twice)."""
    import time

    import boto3

    from sigmaudit.loaders.follow import Follower

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    steps = sorted((SAMPLES / "verl" / "rollout_data").glob("*.jsonl"), key=lambda f: int(f.stem))
    lines = [f.read_bytes() for f in steps]
    client.put_object(Bucket="bucket", Key="synced/log.jsonl", Body=b"".join(lines[:2]))
    with Follower(["s3://bucket/synced/"]) as follower:
        assert sorted(follower.poll().per_group["step"].unique().to_list()) == [1, 2]
        time.sleep(1.1)  # the store's modification time has one-second resolution
        client.put_object(Bucket="bucket", Key="synced/log.jsonl", Body=b"".join(lines[:4]))
        snap = follower.poll()
        assert (snap.changed, follower.files_read) == (True, 2)
    local = load_counts(steps[:4]).per_group
    assert snap.per_group.sort(["step", "prompt"]).equals(local.select(snap.per_group.columns).sort(["step", "prompt"]))


# ---- issue 23: odd keys, secrets in URLs, stalled reads ---------------------------------------------

def test_s3_odd_key_is_named_not_blamed_on_credentials(s3, capsys):
    """Item 17: a key with an empty segment (``run//x.csv``) under a prefix no longer hides the prefix
    (nor blames the credentials): the other objects are read and that key is named in a note; keys
    holding ``?`` or ``[`` are objects' names, not globs (csv and jsonl)."""
    import boto3

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    body = (SAMPLES / "long.csv").read_bytes()
    jsonl = pl.read_csv(SAMPLES / "long.csv").write_ndjson().encode()
    for key, data in (("odd/run//x.csv", body), ("odd/ok.csv", body), ("globby/a?b.csv", body),
                      ("globby/c[1].csv", body), ("globby/d?e.jsonl", jsonl)):
        client.put_object(Bucket="bucket", Key=key, Body=data)
    want = json.loads(run(capsys, "scan", str(SAMPLES / "long.csv"), "-G", "8", "-f", "json")[1])
    code, out, err = run(capsys, "scan", "s3://bucket/odd/", "-G", "8", "-f", "json")
    assert code == 0, err
    assert (json.loads(out)["files"], json.loads(out)["rollouts"]) == (1, want["rollouts"])
    assert "skipped s3://bucket/odd/run//x.csv: an object key with an empty path segment" in err
    assert "credentials" not in err
    code, out, err = run(capsys, "scan", "s3://bucket/globby/", "-G", "8", "-f", "json", "--pool-prompts")
    assert code == 0, err
    got = json.loads(out)
    assert (got["files"], got["rollouts"], got["prompts"]) == (3, 3 * want["rollouts"], want["prompts"])


def _serve(folder: Path):
    """A plain http server for ``folder`` on 127.0.0.1 (stopped by the caller)."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # noqa: ANN002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_secrets_in_urls_are_never_shown(capsys):
    """Item 20: credentials and query strings are redacted in errors and notes; a URL with a query names
    one object; ``HTTP://`` reads like ``http://``."""
    server = _serve(SAMPLES)
    port = server.server_address[1]
    try:
        want = run(capsys, "scan", str(SAMPLES / "long.csv"), "-G", "8", "-f", "json")
        url = f"HTTP://user:PASSWORD@127.0.0.1:{port}/long.csv?X-Amz-Signature=SECRET&X-Amz-Credential=AKIAX"
        got = run(capsys, "scan", url, "-G", "8", "-f", "json")
        assert got[0] == 0, got[2]
        assert json.loads(got[1])["prompts"] == json.loads(want[1])["prompts"]
        code, out, err = run(capsys, "scan", f"https://u:PASSWORD@127.0.0.1:{port}/missing.csv?sig=SECRET")
        assert code == 2 and len(err.strip().splitlines()) == 1
        for text in (got[1], got[2], err):
            assert "PASSWORD" not in text and "SECRET" not in text and "AKIAX" not in text
        assert "***" in err
    finally:
        server.shutdown()


def _stalling_server(seconds: float = 30.0) -> int:
    """A server on 127.0.0.1 that accepts connections and never answers; it stops by itself."""
    from stalling import silent_port

    return silent_port(seconds)


def test_http_read_that_stalls_times_out(capsys, monkeypatch):
    """Item 12: a server that accepts and never answers: a one-line timeout naming the variable to raise,
    within 20 s for 1 s timeouts (robust under load; a read without a timeout waits forever)."""
    import time

    port = _stalling_server()
    monkeypatch.setenv("SIGMAUDIT_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("SIGMAUDIT_READ_TIMEOUT", "1")
    start = time.monotonic()
    code, out, err = run(capsys, "scan", f"http://127.0.0.1:{port}/x.csv")
    assert time.monotonic() - start < 20
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "no answer within 1 s" in err and "SIGMAUDIT_CONNECT_TIMEOUT" in err


@pytest.mark.parametrize("store", ["http", "s3"])
def test_stalled_read_honours_sigterm(tmp_path, store):
    """Items 12 and 30: SIGTERM during a stalled read (http: Python sockets; s3: Polars' native client,
    which never returns to Python) exits 2 with one line within seconds (15 s allowed: a loaded machine),
    no temporary folder left."""
    import signal
    import subprocess
    import sys
    import time

    port = _stalling_server(60)
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(SAMPLES.parent)}
    if store == "s3":
        env.update({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "x",
                    "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"})
        url = "s3://bucket/x.csv"
    else:
        url = f"http://127.0.0.1:{port}/x.csv"
    child = subprocess.Popen([sys.executable, "-m", "sigmaudit", "scan", url], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(6)
    assert child.poll() is None  # still waiting on the server
    child.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    out, err = child.communicate(timeout=30)
    assert time.monotonic() - sent < 15
    assert child.returncode == 2 and out == ""
    assert err.strip().splitlines() == ["sigmaudit: error: terminated (SIGTERM)"]
    assert list((tmp_path / "sigmaudit").glob("run-*")) == []


def test_object_store_listing_that_stalls_times_out(capsys, monkeypatch):
    """Item 12: an S3 endpoint that accepts and never answers: the listing gives up (timeouts and two
    retries passed to the object-store client) with one line naming the variable, not the credentials."""
    import time

    port = _stalling_server(60)
    for key, value in {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "x",
                       "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
                       "SIGMAUDIT_READ_TIMEOUT": "1", "SIGMAUDIT_CONNECT_TIMEOUT": "1"}.items():
        monkeypatch.setenv(key, value)
    start = time.monotonic()
    code, out, err = run(capsys, "scan", "s3://bucket/logs/")
    assert time.monotonic() - start < 30
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "no answer within 1 s" in err and "SIGMAUDIT_READ_TIMEOUT" in err and "credentials" not in err


def _zstd_bomb() -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return zstandard.ZstdCompressor().compress(b'{"prompt_id": "p", "reward": 1}\n' + b" " * (8 << 20))


BAD = Path(__file__).resolve().parent / "fixtures" / "bad"
BY_CONTENT = {"gz/long.csv": lambda: gzip.compress((SAMPLES / "long.csv").read_bytes()),
              "bomb/bomb.csv": lambda: (BAD / "gzip_bomb.jsonl.gz").read_bytes(),
              "bomb/bomb.jsonl.gz": lambda: (BAD / "gzip_bomb.jsonl.gz").read_bytes(), "bomb/zstd.jsonl": _zstd_bomb}


def _same_as_local(capsys, tmp_path: Path, key: str, url: str) -> None:
    """``url`` (the object stored under ``key``) gives what the same bytes in a local file give: the same
    JSON (but the file's name), or the same one-line refusal naming the URL instead of the path."""
    local = tmp_path / key
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(BY_CONTENT[key]())
    want = run(capsys, "scan", str(local), "-G", "8", "-f", "json")
    got = run(capsys, "scan", url, "-G", "8", "-f", "json")
    assert got[0] == want[0], got[2]
    if want[0] == 0:
        assert {k: v for k, v in json.loads(got[1]).items() if k != "notes"} == \
            {k: v for k, v in json.loads(want[1]).items() if k != "notes"}
        assert json.loads(got[1])["rollouts"] == 4800
    else:
        assert got[1] == "" and got[2] == want[2].replace(str(local), url)
        assert "decompresses to more than 250x its size (a compression bomb?)" in got[2]


@pytest.mark.parametrize("key", list(BY_CONTENT))
def test_s3_object_compression_is_told_by_content_and_bounded(s3, capsys, tmp_path, key):
    """Issue 23 item 10 on object stores: an object is read as a local file with the same bytes (its
    compression told by its first bytes, not its key; what it inflates to bounded): gzip under a .csv
    key reads; a gzip bomb under .csv or .jsonl.gz and a zstd bomb under .jsonl are refused, exit 2, one
    line naming the URL (before: the bomb under .csv read as "no data rows", the zstd bomb as one prompt
    inflated in memory, and 510 KB of gzip under .csv took 2 GB of RAM)."""
    import boto3

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    client.put_object(Bucket="bucket", Key=f"content/{key}", Body=BY_CONTENT[key]())
    _same_as_local(capsys, tmp_path, key, f"s3://bucket/content/{key}")


@pytest.mark.parametrize("key", list(BY_CONTENT))
def test_http_and_hf_files_are_told_by_content_and_bounded(capsys, tmp_path, monkeypatch, key):
    """The same over http(s) and for an ``hf://`` file (its Hub download address on a local server
    through ``HF_ENDPOINT``)."""
    served = tmp_path / "served"
    for where in (served / key, served / "datasets" / "org" / "logs" / "resolve" / "main" / key):
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_bytes(BY_CONTENT[key]())
    server = _serve(served)
    port = server.server_address[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    try:
        _same_as_local(capsys, tmp_path / "local", key, f"http://127.0.0.1:{port}/{key}")
        _same_as_local(capsys, tmp_path / "local", key, f"hf://datasets/org/logs/{key}")
    finally:
        server.shutdown()


def test_remote_head_lines_are_bounded(s3):
    """The first lines of an object (csv comments for the Spark engine, a jsonl's first line for the
    framework probe) are read by content and bounded too."""
    import boto3

    from sigmaudit.loaders.readers import csv_skip_rows, remote_lines

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    client.put_object(Bucket="bucket", Key="head/bomb.csv", Body=(BAD / "gzip_bomb.jsonl.gz").read_bytes())
    client.put_object(Bucket="bucket", Key="head/c.csv", Body=gzip.compress(b"# a\n# b\nprompt_id,reward\nq,1\n"))
    with pytest.raises(InputError) as err:
        remote_lines("s3://bucket/head/bomb.csv", 3)
    assert err.value.one_line() == ("s3://bucket/head/bomb.csv: decompresses to more than 250x its size (a "
                                    "compression bomb?); decompress it yourself if the data are real")
    assert remote_lines("s3://bucket/head/c.csv", None) == ["# a", "# b", "prompt_id,reward", "q,1"]
    assert csv_skip_rows("s3://bucket/head/c.csv") == 2


def test_odd_keys_under_any_glob_are_named_and_the_rest_read(s3, capsys):
    """Issue 23 item 17 beyond ``prefix/**/*``: Polars' lister stops at a key with an empty segment
    (``run//x.csv``) or a ``.``/``..`` segment under every glob (it lists the folder recursively), so
    the listing is taken again from pyarrow's client and matched here: the valid objects are read and
    each odd key the glob matches is named in a note; no message blames the credentials."""
    import boto3

    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    df = pl.read_csv(SAMPLES / "long.csv")
    first = df.filter(pl.col("problem_id") < "q150").write_csv().encode()
    second = df.filter(pl.col("problem_id") >= "q150").write_csv().encode()
    for key, body in (("odd2/sub/a.csv", first), ("odd2/sub/b.csv", second), ("odd2/run//x.csv", first),
                      ("odd2/../up.csv", first), ("odd2/sub/./dot.csv", first), ("odd2/sub/notes.txt", b"x")):
        client.put_object(Bucket="bucket", Key=key, Body=body)
    want = json.loads(run(capsys, "scan", str(SAMPLES / "long.csv"), "-G", "8", "-f", "json")[1])
    empty = ("skipped s3://bucket/odd2/run//x.csv: an object key with an empty path segment ('//'), which the "
             "object-store readers cannot address: rename it to read it")
    dots = ("an object key with a '.' or '..' path segment, which the object-store readers cannot address: "
            "rename it to read it")
    for url, notes in (
            ("s3://bucket/odd2/", [f"skipped s3://bucket/odd2/../up.csv and 1 more: {dots}", empty]),
            ("s3://bucket/odd2/**/*.csv", [f"skipped s3://bucket/odd2/../up.csv and 1 more: {dots}", empty]),
            ("s3://bucket/odd2/sub/*.csv", []),
            ("s3://bucket/odd2/s*b/**/*.csv", [f"skipped s3://bucket/odd2/sub/./dot.csv: {dots}"])):
        code, out, err = run(capsys, "scan", url, "-G", "8", "-f", "json")
        assert code == 0, (url, err)
        got = json.loads(out)
        assert {k: v for k, v in got.items() if k not in ("files", "notes")} == \
            {k: v for k, v in want.items() if k not in ("files", "notes")}, url
        assert got["files"] == 2
        assert sorted(n for n in got["notes"] if n.startswith("skipped")) == notes, url
        assert "credentials" not in err
    code, out, err = run(capsys, "scan", "s3://bucket/odd2/r*/*.csv")
    assert (code, out) == (2, "") and "glob matches no supported files" in err and "credentials" not in err


@pytest.mark.parametrize("glob", ["logs/**/*", "logs/*", "logs/*.jsonl*", "logs/**/*.parquet", "logs/*/a.*",
                                  "logs/[bc].*", "logs/**/part/*", "log*/**/*.jsonl"])
def test_relisting_matches_what_polars_lists(s3, glob):
    """Where no odd key stops Polars' lister, the listing taken again by pyarrow and matched here gives
    the same objects, in the same order: the fallback changes nothing but the odd keys."""
    from sigmaudit.loaders.remote import _list_again, list_objects

    assert _list_again(f"s3://bucket/{glob}") == list_objects(f"s3://bucket/{glob}") != []


@pytest.mark.parametrize(("glob", "keys", "matched"), [
    ("a/**/*", ["a/x.csv", "a/b/c.csv", "a//x.csv", "ab/x.csv"], ["a/x.csv", "a/b/c.csv", "a//x.csv"]),
    ("a/*.csv", ["a/x.csv", "a/b/x.csv", "a/x.csv.gz"], ["a/x.csv"]),
    ("a/**/b/*.jsonl", ["a/b/1.jsonl", "a/x/y/b/2.jsonl", "a/b/c/3.jsonl"], ["a/b/1.jsonl", "a/x/y/b/2.jsonl"]),
    ("run?/[0-9].csv", ["run1/5.csv", "run12/5.csv", "run1/x.csv", "run/5.csv"], ["run1/5.csv"]),
    ("r[!x]n/*", ["run/a", "rxn/a", "r/n/a"], ["run/a"]),
    ("a.b+(c)/*", ["a.b+(c)/x", "aXb+(c)/x"], ["a.b+(c)/x"]),
])
def test_glob_regex_matches_object_store_globs(glob, keys, matched):
    """The glob a re-listed prefix is matched with: ``*``/``?`` stay within a segment, ``**`` crosses
    segments, classes and regex metacharacters as in a glob."""
    from sigmaudit.loaders.remote import glob_regex

    assert [k for k in keys if glob_regex(glob).fullmatch(k)] == matched


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory):
    """A pyarrow client for an Azurite emulator (``azurite-blob`` on PATH, from ``npm install azurite``;
    skipped without it) on a free 127.0.0.1 port, with container ``cont``; the environment points Polars'
    and sigmaudit's Azure clients at it for the module."""
    import socket
    import subprocess
    import time

    binary = shutil.which("azurite-blob")
    if binary is None:
        pytest.skip("no azurite-blob on PATH (npm install azurite) for an Azure emulator")
    from pyarrow import fs

    from sigmaudit.loaders.remote import AZURITE_ACCOUNT, AZURITE_KEY

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--silent",
                               "--skipApiVersionCheck", "--location", str(tmp_path_factory.mktemp("azurite"))],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {"AZURE_STORAGE_USE_EMULATOR": "true", "AZURITE_BLOB_STORAGE_URL": f"http://127.0.0.1:{port}",
           "AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT, "AZURE_STORAGE_ACCOUNT_KEY": AZURITE_KEY}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        where = f"127.0.0.1:{port}"
        client = fs.AzureFileSystem(AZURITE_ACCOUNT, account_key=AZURITE_KEY, blob_storage_authority=where,
                                    blob_storage_scheme="http", dfs_storage_authority=where, dfs_storage_scheme="http")
        client.create_dir("cont")
        yield client
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:  # Azurite may ignore SIGTERM while it flushes
            server.kill()
            server.wait(timeout=30)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _put(client, key: str, body: bytes) -> None:  # noqa: ANN001
    """Store ``body`` under ``key`` as is (pyarrow would gzip it again for a key ending in .gz)."""
    with client.open_output_stream(key, compression=None) as out:
        out.write(body)


def test_az_odd_keys_are_named_and_objects_told_by_content(azurite, capsys, tmp_path):
    """Items 17 and 10 on Azure (the Azurite emulator): a '.'/'..' segment key stops Polars' lister on
    az:// too; the listing is taken again by pyarrow's Azure client, the valid objects read, the odd keys
    named; where nothing is odd the re-listing equals Polars'; keys holding '?' or '[' are names, not
    globs; objects are read by content and bounded.
    (An empty-segment key cannot be written to Azurite through pyarrow, so ``run//x`` is s3-only here;
    gs:// has no local emulator here and is not tested end to end.)"""
    from sigmaudit.loaders.remote import _list_again, list_objects

    df = pl.read_csv(SAMPLES / "long.csv")
    _put(azurite, "cont/clean/sub/a.csv", df.filter(pl.col("problem_id") < "q150").write_csv().encode())
    _put(azurite, "cont/clean/sub/b.csv", df.filter(pl.col("problem_id") >= "q150").write_csv().encode())
    for glob in ("clean/**/*", "clean/sub/*.csv", "clean/s*/[ab].csv"):
        assert _list_again(f"az://cont/{glob}") == list_objects(f"az://cont/{glob}") != []
    for key in ("odd/sub/a.csv", "odd/sub/b.csv"):
        _put(azurite, f"cont/{key}", azurite.open_input_stream(f"cont/clean/{key[4:]}", compression=None).read())
    _put(azurite, "cont/odd/../up.csv", b"x")
    _put(azurite, "cont/odd/sub/./dot.csv", b"x")
    want = json.loads(run(capsys, "scan", str(SAMPLES / "long.csv"), "-G", "8", "-f", "json")[1])
    dots = ("an object key with a '.' or '..' path segment, which the object-store readers cannot address: "
            "rename it to read it")
    for url, notes in (("az://cont/odd/", [f"skipped az://cont/odd/../up.csv and 1 more: {dots}"]),
                       ("az://cont/odd/sub/*.csv", [])):
        code, out, err = run(capsys, "scan", url, "-G", "8", "-f", "json")
        assert code == 0, (url, err)
        got = json.loads(out)
        assert {k: v for k, v in got.items() if k not in ("files", "notes")} == \
            {k: v for k, v in want.items() if k not in ("files", "notes")}
        assert sorted(n for n in got["notes"] if n.startswith("skipped")) == notes and "credentials" not in err
    for key, name in (("odd/sub/a.csv", "globby/a?b.csv"), ("odd/sub/b.csv", "globby/c[1].jsonl")):
        body = azurite.open_input_stream(f"cont/{key}", compression=None).read()
        _put(azurite, f"cont/{name}", body if name.endswith(".csv") else pl.read_csv(body).write_ndjson().encode())
    code, out, err = run(capsys, "scan", "az://cont/globby/", "-G", "8", "-f", "json")  # '?', '[': names
    assert code == 0, err
    assert (json.loads(out)["files"], json.loads(out)["rollouts"]) == (2, want["rollouts"])
    for key in BY_CONTENT:
        _put(azurite, f"cont/content/{key}", BY_CONTENT[key]())
        _same_as_local(capsys, tmp_path / key.replace("/", "_"), key, f"az://cont/content/{key}")


def test_object_copies_are_removed_once_reduced_and_bounded_by_free_space(s3, capsys, monkeypatch):
    """A csv/jsonl object is read from a copy in the run folder, copied once (the probe for a framework
    dump reads its first lines only): each copy is removed once its object is reduced (one object on
    disk at a time, not the whole prefix), and a copy that would leave less than
    512 MiB free in TMPDIR is refused in one line naming TMPDIR, not blamed on the object."""
    import shutil as shutil_mod

    from sigmaudit.loaders import remote

    seen = []
    real = remote.download

    def watched(url, dest):  # noqa: ANN001, ANN202
        run_folder = dest.parents[2]
        seen.append(sorted(p.name for p in run_folder.rglob("*") if p.is_file() and p.name != ".lock"))
        return real(url, dest)

    monkeypatch.setattr(remote, "download", watched)
    code, _, err = run(capsys, "scan", "s3://bucket/logs/", "-G", "8", "-f", "json")
    assert code == 0, err
    # the framework probe reads only the first lines (no copy); the load copies b.jsonl, then c.jsonl.gz
    # with b.jsonl's copy gone (the parquet object is read where it lies)
    assert seen == [[], []]
    monkeypatch.setattr(remote, "download", real)
    usage = shutil_mod.disk_usage("/")
    monkeypatch.setattr(shutil_mod, "disk_usage", lambda _: usage._replace(free=100 << 20))
    code, out, err = run(capsys, "scan", "s3://bucket/logs/b.jsonl")
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1
    assert err.startswith("sigmaudit: error: s3://bucket/logs/b.jsonl: not enough free space in TMPDIR (")
    assert "point TMPDIR at a larger disk" in err


def test_an_engine_samples_an_object_from_its_first_lines(s3, capsys, monkeypatch):
    """On an SQL engine the layout of an object-store load is learnt from the first object's first lines
    (the engine reads the objects itself): nothing is copied here; DuckDB then refuses in one line."""
    pytest.importorskip("duckdb")
    from sigmaudit.loaders import remote

    copied = []
    monkeypatch.setattr(remote, "download", lambda url, dest: copied.append(url))
    code, out, err = run(capsys, "scan", "s3://bucket/logs/b.jsonl", "--engine", "duckdb")
    assert (code, out, copied) == (2, "", [])
    assert "--engine duckdb reads local files only" in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def fake_gcs(tmp_path_factory: pytest.TempPathFactory):
    """(upload function) for a fake-gcs-server (``fake-gcs-server`` on PATH; skipped without it) on a free
    127.0.0.1 port with bucket ``bkt``; GOOGLE_BASE_URL and GOOGLE_SKIP_SIGNATURE point Polars' and
    sigmaudit's GCS clients at it for the module."""
    import socket
    import subprocess
    import time
    import urllib.parse
    import urllib.request

    binary = shutil.which("fake-gcs-server")
    if binary is None:
        pytest.skip("no fake-gcs-server on PATH for a GCS emulator")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = tmp_path_factory.mktemp("gcs")
    (data / "bkt").mkdir()
    args = [binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-data", str(data),
            "-public-host", f"127.0.0.1:{port}"]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {"GOOGLE_BASE_URL": f"http://127.0.0.1:{port}", "GOOGLE_SKIP_SIGNATURE": "true"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)

    def upload(name: str, body: bytes) -> None:
        url = (f"http://127.0.0.1:{port}/upload/storage/v1/b/bkt/o?uploadType=media&name="
               + urllib.parse.quote(name, safe=""))
        urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=30).close()

    try:
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield upload
    finally:
        server.kill()
        server.wait(timeout=30)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_gs_objects_read_through_pyarrow_like_local_files(fake_gcs, capsys, tmp_path):
    """Items 10 and 17 on gs:// (fake-gcs-server): the pyarrow GCS client copies objects as stored
    (gzip under .csv reads, bombs are refused as locally), the re-listing equals Polars' listing, and
    keys holding '?' or '[' are names. (The emulator normalises '//' and '..' out of object names, so an
    odd key cannot be stored there: that part is tested on s3 and az only.)"""
    from sigmaudit.loaders.remote import _list_again, list_objects

    df = pl.read_csv(SAMPLES / "long.csv")
    fake_gcs("logs/sub/a?b.csv", df.filter(pl.col("problem_id") < "q150").write_csv().encode())
    fake_gcs("logs/sub/c[1].jsonl", df.filter(pl.col("problem_id") >= "q150").write_ndjson().encode())
    for glob in ("logs/**/*", "logs/sub/*", "logs/s*/c*.jsonl"):
        assert _list_again(f"gs://bkt/{glob}") == list_objects(f"gs://bkt/{glob}") != []
    want = json.loads(run(capsys, "scan", str(SAMPLES / "long.csv"), "-G", "8", "-f", "json")[1])
    code, out, err = run(capsys, "scan", "gs://bkt/logs/", "-G", "8", "-f", "json")
    assert code == 0, err
    assert (json.loads(out)["files"], json.loads(out)["rollouts"]) == (2, want["rollouts"])
    for key in BY_CONTENT:
        fake_gcs(f"content/{key}", BY_CONTENT[key]())
        _same_as_local(capsys, tmp_path / key.replace("/", "_"), key, f"gs://bkt/content/{key}")
