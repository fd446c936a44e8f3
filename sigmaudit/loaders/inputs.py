"""Input resolution, done once per load: the path arguments (files, directories, globs, object-store
URLs) expanded to the files to read, with the files named outright and those skipped beside a
trainer's rollouts (see :mod:`.rules`). Standard input reaches the loaders as a file (the CLI
copies it to the run's temp folder first)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from .paths import expand_paths
from .rules import beside_rollouts


@dataclass(frozen=True)
class Inputs:
    """What a load reads."""

    args: tuple[str | Path, ...]
    """The path arguments as given."""
    files: list[Path | str]
    """The files to read, in order (local files as Paths, remote ones as URLs), without those skipped."""
    named: frozenset[Path]
    """Local files named outright (resolved): never skipped, and their errors are never passed over."""
    skipped: dict[Path | str, str] = field(default_factory=dict)
    """Files passed over so far, with the reason (a note each); the load adds to it."""

    @property
    def remote(self) -> list[str]:
        return [f for f in self.files if isinstance(f, str)]

    @property
    def local(self) -> list[Path]:
        return [f for f in self.files if isinstance(f, Path)]

    def where(self) -> str:
        return ", ".join(map(str, self.args))

    def none_left(self) -> InputError:
        return InputError("no files to read", location=self.where())


def resolve(paths: Sequence[str | Path] | str | Path) -> Inputs:
    """The inputs of ``paths``: expanded (:func:`.paths.expand_paths`), files beside a trainer's
    rollouts set aside with their reason."""
    args = tuple([paths] if isinstance(paths, str | Path) else paths)
    files = expand_paths(list(args))
    named = frozenset(Path(p).resolve() for p in args if Path(p).is_file())
    skipped: dict[Path | str, str] = dict(beside_rollouts(files, named))
    return Inputs(args, [f for f in files if f not in skipped], named, skipped)
