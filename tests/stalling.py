"""A server on 127.0.0.1 that accepts connections and never answers (a read or connect that never ends
by itself, whatever the machine's speed); it stops by itself. Shared by the timeout and signal tests."""

from __future__ import annotations

import socket
import threading
import time


def silent_port(seconds: float = 30.0) -> int:
    """Start the server for ``seconds``; its port."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    end = time.monotonic() + seconds

    def loop() -> None:
        held = []
        while time.monotonic() < end:
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass
        for conn in held:
            conn.close()
        srv.close()

    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1]
