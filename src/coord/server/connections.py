"""Idle connections must not starve real requests of file descriptors.

Every accepted connection holds a descriptor, and uvicorn keeps a connection that never sends
a request open for ever (its keep-alive timer starts only after a first answer). 1,100 such
connections under the common limit of 1,024 open files left no descriptor for a claim: the
accept loop failed with EMFILE and legitimate clients timed out. So the daemon:

- raises its soft open-file limit to the hard one at start (``raise_open_file_limit``);
- closes a connection that sends nothing within the keep-alive timeout, as uvicorn does
  between requests;
- keeps at most ``max_connections`` open, a reserve below the limit for the board's own
  files: when a new connection goes past that, the longest-idle connections without a
  request in progress are closed, so a newcomer with a real request is always served.

asyncio accepts up to its ``backlog`` connections in one go before any of them reaches
``connection_made``, and a closed one gives its descriptor back an iteration later: the bound
leaves room for two such bursts, and the backlog (``accept_batch``) is kept small for it.
Measured by bench/run.py connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
import struct
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# descriptors kept for the board (database, WAL, shared memory, the checkpointer's), the log,
# the lock, MCP sessions and whatever a request opens
RESERVED_FILES = 64
# even with a generous limit, idle sockets cost memory: shed beyond this many
MAX_CONNECTIONS = 4096
# when shedding, close enough that the next few newcomers need not shed again
SHED_TO = 0.75


def raise_open_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 16)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):  # a platform that refuses: keep what we have
            pass
    return soft


def accept_batch(open_file_limit: int) -> int:
    """The listen backlog, which is also how many connections asyncio accepts at once."""
    return max(16, min(open_file_limit // 16, 128))


def connection_bound(open_file_limit: int) -> int:
    """How many connections the daemon keeps open under ``open_file_limit``."""
    room = open_file_limit - RESERVED_FILES - 2 * accept_batch(open_file_limit)
    return max(16, min(room, MAX_CONNECTIONS))


def bounded_protocol(max_connections: int) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the bounds above (``uvicorn.Config(http=...)``)."""

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        last_active = 0.0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.last_active = self.loop.time()
            # A connection that never sends a request gets the same grace as an idle
            # keep-alive one; data_received cancels the timer.
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )
            if len(self.connections) > max_connections:
                self._shed_idle()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            # an event stream cuts a reader that stopped reading without flushing to it first
            # (server/stream.py): close() would hold the unsent buffer until the peer reads
            self.scope["extensions"] = {"coord.abort": self.abort}  # type: ignore[dict-item]

        def abort(self) -> None:
            """Reset the connection: what the socket holds unsent goes too (a plain close
            leaves the kernel sending it to a peer that never reads)."""
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.transport.abort()

        def data_received(self, data: bytes) -> None:
            self.last_active = self.loop.time()
            super().data_received(data)

        def idle(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _shed_idle(self) -> None:
            idle = sorted(
                (c for c in self.connections if c is not self and _is_idle(c)),
                key=lambda c: getattr(c, "last_active", 0.0),
            )
            excess = len(self.connections) - int(max_connections * SHED_TO)
            for connection in idle[: max(excess, 0)]:
                connection.transport.close()
                # the transport calls connection_lost later; count it gone now
                self.connections.discard(connection)

    return BoundedHttpToolsProtocol


def _is_idle(connection: Any) -> bool:
    idle = getattr(connection, "idle", None)
    return bool(idle()) if idle is not None else False
