"""Logs in object stores: ``s3://``, ``gs://``, ``az://``, ``hf://`` and ``https://`` inputs.

Everything goes through Polars' native object-store support, so credentials come from the
standard places and nothing is stored by sigmaudit:

- ``s3://bucket/key`` (also ``s3a://``): ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
  ``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and ``~/.aws/config``, ``AWS_REGION``; an S3-compatible
  server via ``AWS_ENDPOINT_URL`` (and ``AWS_ALLOW_HTTP=true`` for plain http).
- ``gs://bucket/key`` (also ``gcs://``): ``GOOGLE_APPLICATION_CREDENTIALS`` or the gcloud
  application-default login.
- ``az://container/key`` (also ``abfs://``, ``abfss://``, ``azure://``): ``AZURE_STORAGE_ACCOUNT_NAME``
  with ``AZURE_STORAGE_ACCOUNT_KEY`` / ``AZURE_STORAGE_SAS_TOKEN``, or the Azure CLI login.
- ``hf://datasets/<owner>/<name>/path`` (Hugging Face datasets): ``HF_TOKEN`` for private ones.
- ``https://host/path``: one file per URL (no listing, so no directories or globs).

A URL ending in ``/`` or naming no supported file is a prefix ("directory"): every supported
file under it is read. Globs (``*``, ``?``, ``[``, ``**``) are expanded by the store's listing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

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
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@]+@")
_QUERY = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*)\?[^\s#]*")
_CONNECT_PARAMS = re.compile(r"\b(sc://[^\s/]*/?);[^\s]*")


def redact(text: str) -> str:
    """``text`` with every URL's secrets hidden: credentials (``user:password@``), query strings
    (presigned signatures, SAS tokens) and Spark Connect parameters (``;token=...``) become ``***``."""
    text = _USERINFO.sub(r"\1***@", text)
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
        return not self.key or self.url.endswith("/")

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
                         location=text, remedy="pass one URL per file, or use an object store URL")
    return url


def store_error(url: str, exc: Exception) -> InputError:
    """The InputError for a failed listing or read, naming where credentials come from."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    store = STORES.get(url.split("://", 1)[0].lower(), "s3")
    if isinstance(exc, FileNotFoundError) or "not found" in first.lower():
        return InputError("no such object", location=url, remedy="check the URL")
    return InputError(f"cannot read from the object store: {first[:300]}", location=url,
                      remedy=f"check the URL and the credentials ({CREDENTIALS[store]})")


def list_objects(url: str) -> list[str]:
    """Every object matching ``url`` (a glob, or ``prefix/**/*``), via Polars' object-store listing."""
    import polars as pl

    try:
        from polars.io._expand_paths import _expand_paths
    except ImportError as exc:  # pragma: no cover - depends on the installed polars
        raise InputError("this polars version cannot list object stores", location=url,
                         remedy="name each file, or install polars>=1.30") from exc
    try:
        return list(_expand_paths(url).collect()["path"].to_list())
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise store_error(url, exc) from exc


def head_lines(url: str, n: int) -> list[str]:
    """The first ``n`` lines of a remote text file (decompressed)."""
    import polars as pl

    try:
        return pl.scan_lines(url).head(n).collect().to_series().to_list()
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise store_error(url, exc) from exc


def all_lines(url: str) -> list[str]:
    """Every line of a remote text file (error reporting only)."""
    import polars as pl

    try:
        return pl.scan_lines(url).collect().to_series().to_list()
    except (pl.exceptions.PolarsError, OSError, ValueError):
        return []


def comment_lines(lines: list[str]) -> int:
    """Leading comment lines (``#`` or ``"#``) of a csv, as :func:`.readers.csv_skip_rows` counts them."""
    skip = 0
    for line in lines:
        if not line.lstrip().startswith(("#", '"#')):
            break
        skip += 1
    return skip
