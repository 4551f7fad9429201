"""Following the board's events live: ``GET /v1/events/stream``, read with the standard library.

``follow`` yields each event (the dict of ``Event.to_dict()``) once, in order, for as long as
the caller reads: when the connection drops or the daemon restarts it finds the daemon again
the way every command does (``.coord/daemon.json``, the identity proof, a daemon started on
demand; ``coord.client.http``), and resumes with ``Last-Event-ID``, so nothing is missed or
doubled. Besides events it yields ``Interrupted`` (the connection was lost, reconnecting) and
``Resumed`` (back), for the caller to tell its user, and ``Reload`` when the daemon says the
reader is too far behind for the stream: the stream then ends, and the caller reads the state
(or pages the log from ``GET /v1/events``) before following again.

Like ``http.py``, it speaks HTTP/1.1 over a socket: the answer is chunked, the SSE lines within.
"""

from __future__ import annotations

import json
import time

from coord.client.http import Client, _connect, _host_header, _read_all, answer
from coord.errors import CoordError, DaemonUnavailable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

# the daemon's keep-alive comes every 15 s: a connection silent for this long is dead
KEEPALIVE_SECONDS = 15.0
SILENCE_FACTOR = 3
FIRST_PAUSE, MAX_PAUSE = 0.2, 2.0
MAX_HEAD_BYTES = 64 * 1024
MAX_ERROR_BYTES = 1024 * 1024


class Reload:
    """The daemon will not replay this much: read the board again, follow from ``last_seq``."""

    def __init__(self, reason: str, last_seq: int) -> None:
        self.reason = reason
        self.last_seq = last_seq

    def __repr__(self) -> str:
        return f"Reload({self.reason!r}, {self.last_seq})"


class Interrupted:
    """The stream broke (``message`` says how); ``follow`` is reconnecting."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __repr__(self) -> str:
        return f"Interrupted({self.message!r})"


class Resumed:
    """Reconnected after an ``Interrupted``: the events go on from where they stopped."""

    def __repr__(self) -> str:
        return "Resumed()"


def follow(
    client: Client,
    *,
    after: int = 0,
    item: int | None = None,
    keepalive: float | None = None,
) -> Iterator[dict[str, Any] | Reload | Interrupted | Resumed]:
    """Every event after ``after`` (of ``item`` only, if given), then each new one, for ever.
    Raises the board's error for a request it refuses (a wrong token, a bad ``item``)."""
    last = after
    pause = 0.0
    broken: str | None = None
    silence = (keepalive or KEEPALIVE_SECONDS) * SILENCE_FACTOR + 5
    while True:
        try:
            sock, received = _open(client, last, item, keepalive, silence, fresh=broken is not None)
            try:
                if broken is not None:
                    yield Resumed()
                    broken, pause = None, 0.0
                for kind, data, event_id in _messages(sock, received):
                    if kind == "coord":
                        event = json.loads(data)
                        last = int(event_id) if event_id.isdigit() else int(event["seq"])
                        yield event
                    elif kind == "reload":
                        said = json.loads(data)
                        yield Reload(str(said.get("reason", "")), int(said.get("last_seq", last)))
                        return
                why = "the daemon ended the stream (stopping or restarting)"
            finally:
                sock.close()
        except OSError as err:  # refused, reset, silent past the keep-alive
            why = f"lost the connection to the coord daemon ({err})"
        except DaemonUnavailable as err:
            why = err.message
        except CoordError as err:
            if err.http_status < 500:
                raise
            why = err.message
        if broken is None:
            broken = why
            yield Interrupted(why)
        pause = min(max(pause * 2, FIRST_PAUSE), MAX_PAUSE)
        time.sleep(pause)


def _open(
    client: Client,
    after: int,
    item: int | None,
    keepalive: float | None,
    silence: float,
    *,
    fresh: bool,
) -> tuple[Any, bytes]:
    """The socket of a 200 answer and what came of its body with the head; the daemon's error
    raised otherwise."""
    # a reconnect waits for the board's next daemon and never starts one itself: after
    # `coord stop` the daemon stays stopped (as `coord watch` leaves it)
    host, port = client.address(fresh=fresh, start=not fresh)
    query = f"after={after}"
    if item is not None:
        query += f"&item={item}"
    if keepalive is not None:
        query += f"&keepalive={keepalive:g}"
    lines = [
        f"GET /v1/events/stream?{query} HTTP/1.1",
        _host_header(host, port),
        "Connection: close",
        "Accept: text/event-stream",
        f"Authorization: Bearer {client.token()}",
    ]
    if after:
        lines.append(f"Last-Event-ID: {after}")
    sock = _connect(host, port, client.timeout)
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head, rest = _head(sock)
        status_line = head.split(b"\r\n", 1)[0].split()
        if len(status_line) < 2 or not status_line[1].isdigit():
            raise DaemonUnavailable("the coord daemon sent a malformed answer to the stream")
        status = int(status_line[1])
        if status != 200:
            body = rest + _read_all(sock, MAX_ERROR_BYTES - len(rest))
            try:
                payload = json.loads(_dechunked(body) if b"chunked" in head.lower() else body)
            except ValueError:
                payload = body.decode(errors="replace")
            answer(status, payload)  # raises the board's error
            raise DaemonUnavailable(f"the coord daemon answered the stream with {status}")
        sock.settimeout(silence)
    except BaseException:
        sock.close()
        raise
    return sock, rest


def _head(sock: Any) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk or len(data) > MAX_HEAD_BYTES:
            raise OSError("the answer ended before its head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _dechunked(body: bytes) -> bytes:
    return b"".join(_decode_chunks(iter([body])))


def _decode_chunks(received: Iterator[bytes]) -> Iterator[bytes]:
    """The payload of a chunked body, as it arrives; ends at the last chunk or the input's end."""
    buffer = b""
    for data in received:
        buffer += data
        while True:
            line_end = buffer.find(b"\r\n")
            if line_end < 0:
                break
            size = int(buffer[:line_end].split(b";")[0] or b"0", 16)
            if size == 0:
                return
            if len(buffer) < line_end + 2 + size + 2:
                break
            yield buffer[line_end + 2 : line_end + 2 + size]
            buffer = buffer[line_end + 2 + size + 2 :]


def _received(sock: Any, pending: bytes) -> Iterator[bytes]:
    if pending:
        yield pending
    while True:
        data = sock.recv(65536)
        if not data:
            return
        yield data


def _messages(sock: Any, pending: bytes) -> Iterator[tuple[str, str, str]]:
    """(event type, data, id) of each SSE message (https://html.spec.whatwg.org/multipage/
    server-sent-events.html#event-stream-interpretation); comments and retry are skipped."""
    buffer = b""
    kind, event_id = "message", ""
    data: list[str] = []
    for payload in _decode_chunks(_received(sock, pending)):
        buffer += payload
        *lines, buffer = buffer.split(b"\n")  # the daemon ends lines with \n alone
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", errors="replace")
            if not line:
                if data:
                    yield kind, "\n".join(data), event_id
                kind, data = "message", []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                kind = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                event_id = value
