"""Object-store inputs of a dump whose framework reader restructures each file in Python (TRL,
open-instruct, prime-rl, NeMo-RL, AReaL, ROLL, SkyRL): the readers work on local files (and on their
names and folders: step from ``step_N``, ``rollout/<version>/``...), so the objects are copied into a
private run folder under the same keys, read there exactly as local files, and every path in the
result, its notes and its errors is turned back into its URL.

Detection looks at the inputs in order until one is recognised: its first line (jsonl) and schema
tell whether a framework reader claims it; files that fit no layout at all (a trainer's metrics or
metadata beside its rollouts) are passed over, as a local load skips them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import SigmauditError
from . import trainers
from .detect import detect
from .options import LoadedCounts, LoadOptions
from .paths import file_kind
from .remote import download, parse_url
from .tempdirs import run_folder

MAX_PROBES = 8
"""Inputs looked at (first line and schema) before deciding that a remote load is not a framework dump."""


def _local(root: Path, url: str) -> Path:
    u = parse_url(url)
    return root / u.scheme / u.bucket / u.key


def framework_dump(urls: list[str], opts: LoadOptions) -> bool:
    """Whether the first recognisable input among ``urls`` is claimed by a framework reader."""
    from .readers import remote_lines, remote_schema

    with run_folder() as tmp:
        for url in urls[:MAX_PROBES]:
            kind = file_kind(parse_url(url).pure)
            stub = _local(tmp, url)
            stub.parent.mkdir(parents=True, exist_ok=True)
            if kind == ("jsonl", None):
                stub.write_text("\n".join(remote_lines(url, 1)) + "\n", encoding="utf-8")
                if trainers.needs_reader(stub):
                    return True
            try:
                schema = remote_schema(url, tmp)
                if trainers.reader(stub, schema) is not None:
                    return True
                detect(schema, opts, url)
            except SigmauditError:
                continue
            return False
    return False


def _fetch(url: str, dest: Path) -> Path:
    """The object at ``url`` copied to ``dest`` as stored (a .gz stays compressed: the local load reads it
    by content, bounded, as it reads a local file)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    return download(url, dest)


def load_mirrored(args, urls: list[str], load: Callable[[list], LoadedCounts]) -> LoadedCounts:  # noqa: ANN001
    """``load`` over local copies of ``urls`` (each URL argument a file, or a folder of its files),
    with every local path in the result or in an error turned back into its URL."""
    import dataclasses

    with run_folder() as tmp:
        root = tmp / "objects"
        back: dict[str, str] = {}
        for url in urls:
            back[str(_fetch(url, _local(root, url)))] = url
        local_args = []
        for arg in [args] if isinstance(args, str | Path) else list(args):
            text = str(arg)
            if text in urls:
                local_args.append(next(k for k, v in back.items() if v == text))
                continue
            u = parse_url(text)
            key = u.key.split("*")[0].split("?")[0].split("[")[0]
            local = root / u.scheme / u.bucket / key
            local_args.append(local if local.is_dir() else local.parent)
            back.setdefault(str(local.rstrip("/") if isinstance(local, str) else local),
                            f"{u.scheme}://{u.bucket}/{key}".rstrip("/"))
        for scheme in {parse_url(u).scheme for u in urls}:
            back[str(root / scheme) + "/"] = f"{scheme}://"

        def fix(text: str | None) -> str | None:
            if text is None:
                return None
            for local, url in sorted(back.items(), key=lambda kv: -len(kv[0])):
                text = text.replace(local, url)
            return text

        try:
            loaded = load(local_args)
        except SigmauditError as exc:
            exc.message, exc.location = fix(exc.message), fix(exc.location)
            raise
    return dataclasses.replace(loaded, files=tuple(fix(f) for f in loaded.files),
                               notes=tuple(fix(n) for n in loaded.notes))
