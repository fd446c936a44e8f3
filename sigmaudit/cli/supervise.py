"""Under a virtual-memory limit (``ulimit -v``), the run happens in a child process that says how it ended.

Native libraries do not all fail in a way Python sees when memory runs out: Rust's allocator aborts the
process ("memory allocation of 8388608 bytes failed", SIGABRT, exit 134), OpenBLAS prints "Memory allocation
still failed after 10 retries" and calls ``exit(1)`` — the gate-failed code (issue 44). Only another process
can tell such an end from a verdict. So when a limit is set, :func:`supervise` runs the same command in a
child (``python -m sigmaudit``, the same arguments, standard streams shared) and gives it a pipe; the child's
:func:`sigmaudit.cli.run` writes its exit code there once the outcome is decided (:func:`tell`). A child that
ends without having told it ran out of memory: one line on stderr, exit 2. A told outcome is passed on as
it is (the exit code, or death by SIGPIPE). SIGINT and SIGTERM sent to this process are passed to the child,
which reports them itself. The child's stderr is relayed line by line: sigmaudit's own lines at once, any
other (a native library's) held to the end and dropped when the run ran out of memory (OpenBLAS's "Memory
allocation still failed", Rust's "memory allocation of N bytes failed"), so that end is one line. Without a
limit nothing of this runs.

Light on purpose: it runs before the heavy imports.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from typing import Any

MALLOC_ARENAS = "1"
"""glibc malloc arenas of a supervised run (``MALLOC_ARENA_MAX``), unless the user set it: under a memory limit
what counts is address space, and each arena reserves 64 MiB of it (the polars threads allocate with their own
allocator, OpenBLAS runs one thread: one arena costs no measurable time)."""
CHILD_ENV = "_SIGMAUDIT_OUTCOME_FD"
"""In the child: the descriptor its outcome is written to (its presence means: supervised already)."""


def needed() -> bool:
    """A memory limit is set and this process is not the supervised child."""
    from ..errors import memory_limit

    return CHILD_ENV not in os.environ and memory_limit() is not None


def tell(code: int) -> None:
    """In the supervised child: the outcome is decided (exit ``code``); nothing elsewhere."""
    fd = os.environ.get(CHILD_ENV)
    if fd is None:
        return
    try:
        os.write(int(fd), bytes([code & 0xFF]))
    except (OSError, ValueError):
        pass


def supervise() -> int:
    """Run this command in a child and return the exit code to end with (see the module's docstring)."""
    from ..errors import limit_words

    reader, writer = os.pipe()
    # glibc gives each thread that mallocs an arena reserving 64 MiB of address space: a scan of a 45 KB log
    # peaked at 1,350 MB of virtual memory with the default arenas, 412 MB with one (malloc's own setting,
    # read at process start, so it is the child's; the user's value is kept)
    env = {"MALLOC_ARENA_MAX": MALLOC_ARENAS, **os.environ, CHILD_ENV: str(writer)}
    got: list[int] = []  # signals received; the child, once started
    started: list[subprocess.Popen[bytes]] = []

    def on_signal(signum: int, _frame: object) -> None:
        got.append(signum)
        if started:
            _forward(started[0], signum)

    for signum in (signal.SIGINT, signal.SIGTERM):  # before the child exists: none may leave it orphaned
        signal.signal(signum, on_signal)
    try:
        child = subprocess.Popen([sys.executable, "-m", "sigmaudit", *sys.argv[1:]], env=env, pass_fds=(writer,),
                                 stderr=subprocess.PIPE)
    except OSError as exc:  # not even a child fits: say so
        _write(f"sigmaudit: error: cannot start{limit_words()} ({exc.strerror}); raise the limit\n".encode())
        return 2
    started.append(child)
    for signum in got:  # arrived while the child was starting
        _forward(child, signum)
    os.close(writer)
    held: list[bytes] = []
    said: list[bytes] = []  # sigmaudit's own lines, relayed at once
    relay = threading.Thread(target=_relay, args=(child.stderr, held, said), daemon=True)
    relay.start()
    returncode = _wait(child)
    relay.join()
    told = _read_all(reader)
    if told:
        _write(b"".join(held))
        if returncode < 0 and -returncode == getattr(signal, "SIGPIPE", -1):
            return 141
        return told[-1] if returncode < 0 else returncode
    if got:  # the child was stopped before it could report (during its start-up): the signal's line, once
        from .signals import MESSAGES

        if any(line.startswith(b"sigmaudit: error: ") for line in said):  # it said so before it could tell
            return 2
        _write(f"sigmaudit: error: {MESSAGES.get(got[0], 'stopped')}\n".encode())
        return 2
    ended = f"signal {signal.Signals(-returncode).name}" if returncode < 0 else f"exit {returncode}"
    _write(f"sigmaudit: error: out of memory{limit_words()}: a native library ended the run ({ended}) before it "
           "could report; raise the limit\n".encode())
    return 2


def _relay(stream: Any, held: list[bytes], said: list[bytes]) -> None:
    """The child's stderr: sigmaudit's lines written at once (and kept in ``said``), the others kept in ``held``."""
    for line in iter(stream.readline, b""):
        if line.startswith((b"sigmaudit", b"::")):
            _write(line)
            said.append(line)
        else:
            held.append(line)


def _write(data: bytes) -> None:
    from .streams import error_fd

    try:
        os.write(error_fd(), data)
    except OSError:
        pass


def _forward(child: subprocess.Popen[bytes], signum: int) -> None:
    try:
        child.send_signal(signum)
    except OSError:
        pass


def _wait(child: subprocess.Popen[bytes]) -> int:
    while True:
        try:
            return child.wait()
        except InterruptedError:
            continue


def _read_all(fd: int) -> bytes:
    data = b""
    try:
        while chunk := os.read(fd, 64):
            data += chunk
    except OSError:
        pass
    finally:
        os.close(fd)
    return data
