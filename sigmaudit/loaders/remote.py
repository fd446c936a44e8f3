"""Logs in object stores: ``s3://``, ``gs://``, ``az://``, ``hf://`` and ``https://`` inputs.

Listings and parquet files go through Polars' native object-store support; csv and jsonl objects are
copied as stored (:func:`open_object`: pyarrow's s3/gcs/azure clients, urllib for http(s) and the Hub)
and read as local files, so that their compression is told by content and bounded. Credentials come
from the standard places and nothing is stored by sigmaudit:

- ``s3://bucket/key`` (also ``s3a://``): ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
  ``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and ``~/.aws/config``, ``AWS_REGION``; an S3-compatible
  server via ``AWS_ENDPOINT_URL`` (and ``AWS_ALLOW_HTTP=true`` for plain http).
- ``gs://bucket/key`` (also ``gcs://``): ``GOOGLE_APPLICATION_CREDENTIALS`` or the gcloud
  application-default login (``GOOGLE_BASE_URL`` and ``GOOGLE_SKIP_SIGNATURE`` for a local server).
- ``az://container/key`` (also ``abfs://``, ``abfss://``, ``azure://``): ``AZURE_STORAGE_ACCOUNT_NAME``
  with ``AZURE_STORAGE_ACCOUNT_KEY`` / ``AZURE_STORAGE_SAS_TOKEN``, or the Azure CLI login
  (``AZURE_STORAGE_USE_EMULATOR`` for Azurite).
- ``hf://datasets/<owner>/<name>/path`` (Hugging Face datasets): ``HF_TOKEN`` for private ones
  (``HF_ENDPOINT`` for a mirror of the Hub).
- ``https://host/path``: one file per URL (no listing, so no directories or globs).

A URL ending in ``/`` or naming no supported file is a prefix ("directory"): every supported
file under it is read. Globs (``*``, ``?``, ``[``, ``**``) are expanded by the store's listing.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputError

STORES = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "azure": "azure",
          "abfs": "azure", "abfss": "azure", "hf": "hf", "http": "http", "https": "http"}
"""URL scheme -> object store."""
CREDENTIALS = {
    "s3": "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE (AWS_ENDPOINT_URL for S3-compatible servers)",
    "gcs": "GOOGLE_APPLICATION_CREDENTIALS or 'gcloud auth application-default login'",
    "azure": "AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN",
    "hf": "HF_TOKEN",
    "http": "a URL the machine can fetch",
}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_USERINFO = re.compile(r"\b((?:[Hh][Tt][Tt][Pp][Ss]?)://[^/\s@]+|[A-Za-z][A-Za-z0-9+.-]*://[^/\s@:]*:[^/\s@]*)@")
_QUERY = re.compile(r"\b([Hh][Tt][Tt][Pp][Ss]?://[^\s?#]*)\?[^\s#]*")
_CONNECT_PARAMS = re.compile(r"\b(sc://[^\s/]*/?);[^\s]*")


def redact(text: str) -> str:
    """``text`` with every URL's secrets hidden: credentials (``user:password@``), query strings
    (presigned signatures, SAS tokens) and Spark Connect parameters (``;token=...``) become ``***``."""
    text = _USERINFO.sub(lambda m: m.group(1).split("://")[0] + "://***@", text)
    text = _QUERY.sub(r"\1?***", text)
    return _CONNECT_PARAMS.sub(r"\1;***", text)


@dataclass(frozen=True)
class RemoteURL:
    """One parsed object-store URL."""

    url: str
    """The URL as given."""
    scheme: str
    """Lower-cased scheme (``s3``, ``gs``, ``hf``...)."""
    store: str
    """Which store: ``s3``, ``gcs``, ``azure``, ``hf`` or ``http``."""
    bucket: str
    """Bucket, container, host, or for ``hf`` the repository (``datasets/<owner>/<name>``)."""
    key: str
    """Path inside it, without a leading ``/`` (may be empty, may hold a glob)."""

    @property
    def has_glob(self) -> bool:
        """The key holds a glob pattern."""
        return any(c in self.key for c in "*?[")

    @property
    def is_prefix(self) -> bool:
        """The URL names a "directory": it ends in ``/`` or its key is empty."""
        return not self.key or self.key.endswith("/")

    @property
    def pure(self) -> PurePosixPath:
        """The key as a path (for suffixes)."""
        return PurePosixPath(self.key or "/")


def is_remote(text: object) -> bool:
    """``text`` is a string with a URL scheme (``s3://``...), i.e. not a local path."""
    return isinstance(text, str) and _SCHEME.match(text) is not None


def parse_url(text: str) -> RemoteURL:
    """Parse an object-store URL; InputError for an unknown scheme or a missing bucket."""
    m = _SCHEME.match(text)
    if m is None:
        raise InputError("not a URL (expected scheme://bucket/key)", location=text)
    scheme = m.group(1).lower()
    if scheme not in STORES:
        known = ", ".join(f"{s}://" for s in ("s3", "gs", "az", "abfss", "hf", "https"))
        raise InputError(f"unsupported URL scheme {scheme}://; supported: {known}", location=text,
                         remedy="copy the files locally, or use one of those stores")
    store = STORES[scheme]
    rest = text[m.end():]
    if store == "http":  # a query (a presigned URL's signature) is part of one object's address, not a glob
        rest = rest.split("#", 1)[0].split("?", 1)[0]
    parts = rest.split("/")
    head = 3 if store == "hf" else 1  # hf://datasets/<owner>/<name>/path
    if store == "hf" and (len(parts) < 3 or parts[0] not in ("datasets", "spaces", "models")
                          or not parts[1] or not parts[2]):
        raise InputError("Hugging Face URLs look like hf://datasets/<owner>/<name>/<path>", location=text)
    bucket = "/".join(parts[:head])
    if not bucket:
        raise InputError(f"{scheme}:// URL without a bucket", location=text,
                         remedy=f"write {scheme}://<bucket>/<path>")
    key = "/".join(parts[head:]).lstrip("/")
    url = RemoteURL(text, scheme, store, bucket, key)
    if store == "http" and (url.has_glob or url.is_prefix):
        raise InputError("http(s) URLs cannot be listed: name each file (no directories or globs)",
                         location=redact(text), remedy="pass one URL per file, or use an object store URL")
    return url


def normalized(text: str) -> str:
    """``text`` with its scheme in lower case (``HTTP://`` reads as ``http://``)."""
    m = _SCHEME.match(text)
    return text if m is None else m.group(1).lower() + text[m.end(1):]


READ_TIMEOUT_ENV, CONNECT_TIMEOUT_ENV = "SIGMAUDIT_READ_TIMEOUT", "SIGMAUDIT_CONNECT_TIMEOUT"
DEFAULT_READ_TIMEOUT, DEFAULT_CONNECT_TIMEOUT = 60.0, 10.0
"""Seconds a remote read may wait for data, and a connection (object store, http, Spark Connect) to open."""


def timeouts() -> tuple[float, float]:
    """(read, connect) timeouts in seconds, from ``SIGMAUDIT_READ_TIMEOUT`` / ``SIGMAUDIT_CONNECT_TIMEOUT``."""
    import os

    from ..errors import ConfigError

    out = []
    for name, default in ((READ_TIMEOUT_ENV, DEFAULT_READ_TIMEOUT), (CONNECT_TIMEOUT_ENV, DEFAULT_CONNECT_TIMEOUT)):
        text = os.environ.get(name, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:
            value = -1.0
        if not 0 < value < 1e6:
            raise ConfigError(f"{name} must be a number of seconds above 0, got {text!r}", location=name)
        out.append(value)
    return out[0], out[1]


def storage_options(url: str) -> dict | None:
    """Polars' object-store client options for ``url``: the read and connect timeouts, two retries
    (without them a stalled store holds a read for minutes)."""
    if STORES.get(url.split("://", 1)[0].lower()) not in ("s3", "gcs", "azure"):
        return None
    read, connect = timeouts()
    return {"timeout": f"{read:g}s", "connect_timeout": f"{connect:g}s", "max_retries": 2}


def http_open(url: str):  # noqa: ANN201
    """An open http(s) response for ``url`` (the bytes as served, never decompressed), with the connect
    timeout for the connection and the read timeout for every wait for data; failures
    are one-line InputErrors."""
    import urllib.error
    import urllib.request

    read, connect = timeouts()
    try:
        response = urllib.request.urlopen(_request(url), timeout=connect)  # noqa: S310 - http(s) only (parse_url)
        with contextlib.suppress(AttributeError, OSError):
            response.fp.raw._sock.settimeout(read)  # noqa: SLF001 - no public way to set it after connecting
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 410):
            raise InputError("no such object (HTTP 404)", location=redact(url), remedy="check the URL") from exc
        raise InputError(f"the server answered HTTP {exc.code} ({exc.reason})", location=redact(url),
                         remedy="check the URL (a presigned URL may have expired)") from exc
    except TimeoutError as exc:
        raise timeout_error(url, connect, CONNECT_TIMEOUT_ENV) from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise timeout_error(url, connect, CONNECT_TIMEOUT_ENV) from exc
        raise InputError(f"cannot fetch: {reason}", location=redact(url),
                         remedy="check the URL and the network") from exc
    return response


def _request(url: str):  # noqa: ANN202
    """A urllib request for ``url``: credentials in it (``user:password@``) sent as HTTP basic auth; an
    ``hf://`` URL as the Hub's download address (:func:`hf_address`)."""
    import base64
    import urllib.parse
    import urllib.request

    if parse_url(url).store == "hf":
        address, token = hf_address(url)
        return urllib.request.Request(address, headers={"Authorization": f"Bearer {token}"} if token else {})
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return urllib.request.Request(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    plain = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    user = urllib.parse.unquote(parts.username)
    secret = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{secret}".encode()).decode()
    return urllib.request.Request(plain, headers={"Authorization": f"Basic {token}"})


def hf_address(url: str) -> tuple[str, str | None]:
    """(https address, token) of a file in a Hugging Face repository: ``hf://datasets/<owner>/<name>[@<revision>]/<path>``
    is served at ``$HF_ENDPOINT/datasets/<owner>/<name>/resolve/<revision>/<path>`` (``https://huggingface.co``,
    revision ``main`` by default), with ``HF_TOKEN`` for private ones."""
    import os
    import urllib.parse

    u = parse_url(url)
    repo, _, revision = u.bucket.partition("@")
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    address = f"{endpoint}/{repo}/resolve/{urllib.parse.quote(revision or 'main', safe='')}/{urllib.parse.quote(u.key)}"
    return address, os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


def timeout_error(url: str, seconds: float, env: str) -> InputError:
    return InputError(f"no answer within {seconds:g} s", location=redact(url),
                      remedy=f"check the network and the server, or raise {env} (seconds)")


def open_object(url: str) -> tuple[Any, int | None]:
    """(binary stream, size in bytes or None) of the object at ``url`` as stored: never decompressed,
    so that the reader tells compressed data by their first bytes and bounds what they inflate to as it
    does for a local file. http(s) and ``hf://`` through urllib, s3/gs/az through pyarrow's clients
    (credentials from the same places as Polars': see the module's docstring); with the timeouts."""
    u = parse_url(url)
    if u.store in ("http", "hf"):
        response = http_open(url)
        length = response.headers.get("Content-Length")
        return response, int(length) if length and length.isdigit() else None
    fs, root = _filesystem(u)
    try:
        handle = fs.open_input_file(f"{root}/{u.key}")
        return handle, handle.size()
    except (OSError, ValueError) as exc:
        raise store_error(url, exc) from exc


def _filesystem(u: RemoteURL):  # noqa: ANN202
    """(pyarrow file system, root: the bucket or container) of an s3, gcs or azure URL, with the read and
    connect timeouts."""
    import datetime
    import os
    import urllib.parse

    from pyarrow import fs

    read, connect = timeouts()
    if u.store == "s3":
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None
        if region is None and endpoint is None:
            with contextlib.suppress(OSError, ValueError):
                region = fs.resolve_s3_region(u.bucket)
        retry = fs.AwsStandardS3RetryStrategy(max_attempts=3)
        return fs.S3FileSystem(region=region, endpoint_override=endpoint, connect_timeout=connect,
                               request_timeout=read, retry_strategy=retry), u.bucket
    if u.store == "gcs":  # GOOGLE_BASE_URL / GOOGLE_SKIP_SIGNATURE: a local server, as Polars' client reads them
        base = urllib.parse.urlsplit(os.environ.get("GOOGLE_BASE_URL") or "")
        where = {"endpoint_override": base.netloc, "scheme": base.scheme or "https"} if base.netloc else {}
        anonymous = os.environ.get("GOOGLE_SKIP_SIGNATURE", "").strip().lower() in ("1", "true")
        return fs.GcsFileSystem(anonymous=anonymous, retry_time_limit=datetime.timedelta(seconds=3 * read),
                                **where), u.bucket
    container, _, host = u.bucket.partition("@")
    account = host.split(".")[0] or os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") or \
        os.environ.get("AZURE_STORAGE_ACCOUNT")
    key = os.environ.get("AZURE_STORAGE_ACCOUNT_KEY") or os.environ.get("AZURE_STORAGE_ACCESS_KEY") or None
    emulator = _azurite()
    if emulator:  # as Polars' client: the Azurite emulator and, unless set, its well-known account
        account, key = account or AZURITE_ACCOUNT, key or AZURITE_KEY
    if not account:
        raise InputError("no Azure storage account named", location=u.url,
                         remedy="set AZURE_STORAGE_ACCOUNT_NAME, or write abfss://<container>@<account>.dfs.core.windows.net/<path>")
    sas = None if key else os.environ.get("AZURE_STORAGE_SAS_TOKEN") or None
    return fs.AzureFileSystem(account, account_key=key, sas_token=sas, **emulator), container


AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""The Azurite emulator's published development account and key (not a secret)."""


def _azurite() -> dict[str, str]:
    """pyarrow's options for the Azurite emulator when ``AZURE_STORAGE_USE_EMULATOR`` is set (at
    ``AZURITE_BLOB_STORAGE_URL``, default ``http://127.0.0.1:10000``), as Polars' client reads them; {} else."""
    import os
    import urllib.parse

    if os.environ.get("AZURE_STORAGE_USE_EMULATOR", "").strip().lower() not in ("1", "true"):
        return {}
    where = urllib.parse.urlsplit(os.environ.get("AZURITE_BLOB_STORAGE_URL") or "http://127.0.0.1:10000")
    scheme = where.scheme or "http"
    return {"blob_storage_authority": where.netloc, "blob_storage_scheme": scheme,
            "dfs_storage_authority": where.netloc, "dfs_storage_scheme": scheme}


def download(url: str, dest: Path) -> Path:
    """The object at ``url`` copied to ``dest`` byte for byte, as stored (a .gz stays compressed), with
    the timeouts, leaving ``FREE_RESERVE`` bytes free (checked every 64 MiB); a full or vanished temporary
    folder is not blamed on the object."""
    import shutil
    import tempfile

    from .tempdirs import FREE_RESERVE, temp_failure

    read, _ = timeouts()
    raw, _ = open_object(url)
    try:
        with contextlib.closing(raw), open(dest, "wb") as out:
            written = 0
            while chunk := raw.read(1 << 20):
                checked = written % (64 << 20) < len(chunk)  # every 64 MiB
                if checked and shutil.disk_usage(dest.parent).free < FREE_RESERVE + len(chunk):
                    raise InputError(f"not enough free space in TMPDIR ({tempfile.gettempdir()}) to copy it",
                                     location=redact(url), remedy="point TMPDIR at a larger disk, or free space there")
                out.write(chunk)
                written += len(chunk)
    except InputError:
        raise
    except TimeoutError as exc:
        raise timeout_error(url, read, READ_TIMEOUT_ENV) from exc
    except OSError as exc:
        own = temp_failure(exc, dest.parent, redact(url))
        raise (own or store_error(url, exc)) from exc
    return dest


def store_error(url: str, exc: Exception) -> InputError:
    """The InputError for a failed listing or read, naming where credentials come from."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    store = STORES.get(url.split("://", 1)[0].lower(), "s3")
    if isinstance(exc, FileNotFoundError) or "not found" in first.lower():
        return InputError("no such object", location=url, remedy="check the URL")
    if isinstance(exc, TimeoutError) or any(t in str(exc).lower() for t in ("timed out", "timeout was reached")):
        return timeout_error(url, timeouts()[0], READ_TIMEOUT_ENV)
    return InputError(f"cannot read from the object store: {first[:300]}", location=url,
                      remedy=f"check the URL and the credentials ({CREDENTIALS[store]})")


def list_objects(url: str) -> list[str]:
    """Every object matching ``url`` (a glob, or ``prefix/**/*``), via Polars' object-store listing; when
    that stops at a key it cannot address (:func:`odd_key`), listed again by pyarrow's client
    (:func:`_list_again`), the odd keys included for the load to skip with a note naming them."""
    import polars as pl

    try:
        from polars.io._expand_paths import _expand_paths
    except ImportError as exc:  # pragma: no cover - depends on the installed polars
        raise InputError("this polars version cannot list object stores", location=url,
                         remedy="name each file, or install polars>=1.30") from exc
    try:
        return list(_expand_paths(url, storage_options=storage_options(url)).collect()["path"].to_list())
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        odd = odd_key_error(url, exc)
        if odd is None:
            raise store_error(url, exc) from exc
        listed = _list_again(url)
        if listed is None:
            raise odd from exc
        return listed


def object_stamps(urls: list[str]) -> dict[str, tuple | None]:
    """(size, modification time in ns) of each object in an s3, gcs or azure store (one request per
    object, by pyarrow's client): an object uploaded again shows a new one. None for the other stores
    (http, hf: such a file is read once)."""
    import dataclasses

    out: dict[str, tuple | None] = dict.fromkeys(urls)
    by_bucket: dict[tuple[str, str], list[tuple[str, RemoteURL]]] = {}
    for url in urls:
        u = parse_url(url)
        if u.store in ("s3", "gcs", "azure"):
            by_bucket.setdefault((u.store, u.bucket), []).append((url, u))
    for items in by_bucket.values():
        client, root = _filesystem(dataclasses.replace(items[0][1], key=""))
        try:
            infos = client.get_file_info([f"{root}/{u.key}" for _, u in items])
        except (OSError, ValueError) as exc:
            raise store_error(items[0][0], exc) from exc
        for (url, _), info in zip(items, infos, strict=True):
            out[url] = (info.size, info.mtime_ns)
    return out


def _list_again(url: str) -> list[str] | None:
    """Every object matching ``url`` (an s3, gcs or azure glob), listed by pyarrow's client under the
    pattern's literal folder and matched here (:func:`glob_regex`); None for the other stores."""
    import dataclasses

    from pyarrow import fs

    u = parse_url(url)
    if u.store not in ("s3", "gcs", "azure"):
        return None
    literal = re.split(r"[*?\[]", u.key, maxsplit=1)[0]
    folder = literal.rsplit("/", 1)[0] if "/" in literal else ""
    client, root = _filesystem(dataclasses.replace(u, key=folder))
    pattern = glob_regex(u.key)
    try:
        found = client.get_file_info(fs.FileSelector(f"{root}/{folder}".rstrip("/"), recursive=True,
                                                     allow_not_found=True))
    except (OSError, ValueError) as exc:
        raise store_error(url, exc) from exc
    keys = sorted(info.path[len(root) + 1:] for info in found if info.type == fs.FileType.File)
    return [f"{u.scheme}://{u.bucket}/{key}" for key in keys if pattern.fullmatch(key)]


def glob_regex(pattern: str) -> re.Pattern[str]:
    """An object-store glob as a regular expression over whole keys: ``*`` and ``?`` within one path
    segment, ``**`` across segments (``a/**/b`` also matches ``a/b``), ``[...]`` a class (``[!...]`` negated)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        end = pattern.find("]", i + 2) if c == "[" else -1
        if c == "[" and end > 0:
            body = pattern[i + 1:end]
            negated = body.startswith("!")
            body = (body[1:] if negated else body).replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
            out.append(f"[^/{body}]" if negated else f"(?!/)[{body}]")
            i = end + 1
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def odd_key(key: str) -> str | None:
    """Why the object-store reader cannot address ``key`` (an empty path segment, ``run//x.jsonl``, or a
    ``.``/``..`` segment); None for a key it can."""
    segments = key.split("/")
    if "" in segments[:-1] or key.startswith("/"):
        return "an empty path segment ('//')"
    if any(part in (".", "..") for part in segments):
        return "a '.' or '..' path segment"
    return None


def unaddressable(url: str) -> str | None:
    """The reason an object's key cannot be addressed by the object-store readers (:func:`odd_key`), or None."""
    return odd_key(parse_url(url).key) if is_remote(url) else None


ODD_KEY_ERROR = re.compile(r'Path "([^"]*)" contained (?:an? )?empty path segment|Error parsing Path "([^"]*)"')


def odd_key_error(url: str, exc: Exception) -> InputError | None:
    """The listing failed on one object whose key the object-store reader cannot address
    (:func:`odd_key`): the one-line refusal naming that key and the fix, not the credentials."""
    m = ODD_KEY_ERROR.search(str(exc))
    if m is None:
        return None
    u = parse_url(url)
    name = m.group(1) if m.group(1) is not None else m.group(2)
    why = odd_key(name) or "a key the reader cannot parse"
    return InputError(f"the listing holds an object the reader cannot address: {u.scheme}://{u.bucket}/{name} "
                      f"({why}); the other objects were not read", location=url,
                      remedy="name the objects or a narrower prefix/glob that leaves it out, or rename that object")


def comment_lines(lines: list[str]) -> int:
    """Leading comment lines (``#`` or ``"#``) of a csv, as :func:`.readers.csv_skip_rows` counts them."""
    skip = 0
    for line in lines:
        if not line.lstrip().startswith(("#", '"#')):
            break
        skip += 1
    return skip
