"""What the OTLP receiver lets in, and for how long (docs/architecture.md, 'Data flow', ``live/``): a whole-request
deadline per connection, connection limits in all and per client address, and a budget
of body bytes held in memory at once. Slow or numerous clients then cost bounded threads
and memory, and cannot keep other clients' exports out.

* :class:`Deadlines`: one watchdog thread; a connection must deliver a whole request
  (request line, headers and body) within ``request_timeout`` seconds of the server
  starting to wait for it, however the bytes trickle in. At the deadline the socket's
  read side is shut down, so the blocked read returns and the handler answers 408 (or
  just closes, when not even the headers came).
* :class:`Admission`: counts open connections (``max_connections`` in all,
  ``max_per_client`` per client IP address) and reserved body bytes
  (``max_buffered``); over a limit the request is answered 503 with ``Retry-After``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter


class Deadlines:
    """Shut down the read side of sockets whose request is overdue.

    ``watch(sock, seconds)`` starts (or restarts) a socket's clock, ``unwatch(sock)``
    stops it and tells whether the deadline had passed. Thread-safe; the watchdog thread
    starts on first use and stops with :meth:`close`.
    """

    def __init__(self) -> None:
        self._due: dict[socket.socket, float] = {}
        self._expired: set[socket.socket] = set()
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def watch(self, sock: socket.socket, seconds: float) -> None:
        """Give ``sock`` ``seconds`` from now to deliver its request."""
        with self._cond:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="whenpro-otlp-deadlines", daemon=True)
                self._thread.start()
            self._expired.discard(sock)
            self._due[sock] = time.monotonic() + seconds
            self._cond.notify()

    def unwatch(self, sock: socket.socket) -> bool:
        """Stop the clock of ``sock``; True when its deadline had passed."""
        with self._cond:
            self._due.pop(sock, None)
            expired = sock in self._expired
            self._expired.discard(sock)
            return expired

    def passed(self, sock: socket.socket) -> bool:
        """True when the deadline of ``sock`` has passed (its clock keeps running)."""
        with self._cond:
            return sock in self._expired

    def close(self) -> None:
        """Stop the watchdog thread."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                for sock in [s for s, due in self._due.items() if due <= now]:
                    del self._due[sock]
                    self._expired.add(sock)
                    with contextlib.suppress(OSError):  # (already closed)
                        sock.shutdown(socket.SHUT_RD)  # the blocked read returns; the answer can still go out
                nearest = min(self._due.values(), default=now + 60.0)
                self._cond.wait(max(0.0, nearest - now))


class Admission:
    """Connection and body-byte limits.

    Args:
        max_connections: connections open at once, from all clients.
        max_per_client: connections open at once from one client IP address.
        max_buffered: request body bytes held in memory at once, over all connections.
    """

    def __init__(self, max_connections: int, max_per_client: int, max_buffered: int) -> None:
        self.max_connections = max(1, max_connections)
        self.max_per_client = max(1, max_per_client)
        self.max_buffered = max_buffered
        self._lock = threading.Lock()
        self._open: Counter[str] = Counter()
        self._total = 0
        self._buffered = 0

    def enter(self, client: str) -> str | None:
        """Count a new connection from ``client``; ``None`` when admitted, else the reason
        it is not (the caller answers 503 and closes, and does not call :meth:`leave`)."""
        with self._lock:
            if self._total >= self.max_connections:
                return f"too many connections ({self.max_connections})"
            if self._open[client] >= self.max_per_client:
                return f"too many connections from {client} ({self.max_per_client})"
            self._open[client] += 1
            self._total += 1
            return None

    def open_from(self, client: str) -> int:
        """How many admitted connections from ``client`` are open now."""
        with self._lock:
            return self._open[client]

    def leave(self, client: str) -> None:
        """An admitted connection closed."""
        with self._lock:
            self._open[client] -= 1
            if self._open[client] <= 0:
                del self._open[client]
            self._total -= 1

    def reserve(self, n: int) -> bool:
        """Reserve ``n`` body bytes; False (nothing reserved) when over the budget."""
        with self._lock:
            if self._buffered + n > self.max_buffered:
                return False
            self._buffered += n
            return True

    def release(self, n: int) -> None:
        """Give back reserved body bytes."""
        with self._lock:
            self._buffered -= n

    @property
    def open_connections(self) -> int:
        """Admitted connections open now."""
        with self._lock:
            return self._total


__all__ = ["Admission", "Deadlines"]
