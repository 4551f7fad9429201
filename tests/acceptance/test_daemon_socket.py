"""The daemon's connections must not sit in Nagle's algorithm.

`coord serve` binds its own socket as ``socket.socket(family, SOCK_STREAM)``, so ``proto`` is 0
and asyncio's ``_set_nodelay`` (which requires ``proto == IPPROTO_TCP``) never sets
TCP_NODELAY on accepted connections. uvicorn writes a response's headers and body in two
writes, so on a keep-alive connection the body waits for the client's delayed ACK: every
request after the first on a connection takes ~40 ms instead of ~0.5 ms. Measured here:
GET /v1/health on one keep-alive connection, 43 ms before, 0.5 ms with the socket made with
``proto=IPPROTO_TCP``. A timing assertion would be flaky, so this checks the cause.
"""

from __future__ import annotations

import socket

import uvicorn

from coord.server import daemon as daemon_module


def test_the_listening_socket_gets_tcp_nodelay_on_its_connections(board_dir, monkeypatch):
    seen = {}

    def fake_run(self, sockets=None):
        (sock,) = sockets
        seen["proto"] = sock.proto
        seen["nodelay"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        sock.close()

    monkeypatch.setattr(uvicorn.Server, "run", fake_run)
    daemon_module.serve(board_dir)
    # Either makes accepted connections NODELAY: asyncio sets it for IPPROTO_TCP sockets,
    # and Linux copies it from a listening socket to the connections it accepts.
    assert seen["proto"] == socket.IPPROTO_TCP or seen["nodelay"], seen
