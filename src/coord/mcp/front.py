"""`coord mcp`'s first answers, given before the MCP SDK has loaded.

A client spawns ``coord mcp`` for each session and lists its tools at once; importing the SDK
takes a second or more (several on a loaded machine), and a client that asks before then
starts the model without coord's tools. So the process answers in two stages:

1. This front, standard library only, claims stdin and stdout (fd 0 then reads EOF and fd 1
   goes to stderr, as the SDK's stdio transport does, so stray output never reaches the wire)
   and answers ``initialize``, ``ping`` and the lists of tools, prompts and resources from the
   manifest (``coord.mcp.manifest``: what the SDK server answers, generated from it and
   checked against it by a test), while a thread imports the SDK and builds the server. A
   message the front cannot answer (a tool call) waits for the SDK.
2. Once the server is built, the SDK's own stdio transport (``server.run("stdio")``, public
   API) runs on two pipes put on fd 0 and 1. The client's ``initialize`` and every
   notification are replayed to it in order (its answer to that ``initialize`` is dropped:
   the client has one), then the messages that waited, then every line passes through both
   ways unchanged, ids and notifications as they were.

A connection that opens with anything else (the 2026 era's ``server/discover``) is the SDK's
from its first request: the front answers no ``initialize`` after it. ``COORD_MCP_FRONT=0``
skips the front (the SDK alone, as before).
"""

from __future__ import annotations

import json
import os
import queue
import select
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from coord.mcp import manifest

# tests only: the SDK is imported once this file exists, so a test can talk to the front alone
SDK_GATE_VAR = "COORD_TEST_MCP_SDK_GATE"
FRONT_VAR = "COORD_MCP_FRONT"

Event = tuple[str, Any]  # ("line", text) | ("eof", None) | ("ready", server) | ("failed", text)


def enabled() -> bool:
    return os.environ.get(FRONT_VAR, "1") != "0"


def serve(build: Callable[[], Any]) -> None:
    """Serve MCP on stdio: the front until ``build()`` (run in a thread) returns the SDK server,
    then that server, until the client closes stdin."""
    wire = Wire()
    front = Front(wire.write, manifest.load())
    events: queue.SimpleQueue[Event] = queue.SimpleQueue()
    # the import holds the interpreter in slices of this length; the answers wait for one
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    threading.Thread(target=_read, args=(wire.inp, events), name="mcp-stdin", daemon=True).start()
    threading.Thread(target=_load, args=(build, events), name="mcp-sdk", daemon=True).start()
    ended = False
    while True:
        kind, value = events.get()
        if kind == "line":
            front.take(value)
        elif kind == "eof":
            ended = True
            if not front.waiting:
                return  # everything asked was answered; nothing for the SDK to do
        elif kind == "failed":
            print(f"coord mcp: the MCP server could not start\n{value}", file=sys.stderr)
            raise SystemExit(1)
        else:
            break
    sys.setswitchinterval(switch_interval)
    relay = _Relay(wire.write, front.to_sdk, front.given, None if ended else events)
    run_on_pipes(value, relay.feed, relay.take)


class Wire:
    """The client's stdin and stdout, on private descriptors."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.inp = os.dup(0)
        self.out = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        self._lock = threading.Lock()

    def write(self, line: bytes) -> None:
        with self._lock:
            _write_all(self.out, line + b"\n")


class Front:
    """What the client sent before the SDK runs: the answers it can give, and the lines the SDK
    must see (``to_sdk``: each with the id of its answer to drop, or None)."""

    def __init__(self, write: Callable[[bytes], None], answers: dict[str, Any]) -> None:
        self.write = write
        self.answers = answers
        self.version: str | None = None  # negotiated by the client's initialize
        self.given: Any = None  # the initialize result the client got
        self.to_sdk: list[tuple[bytes, Any]] = []
        self.waiting = False  # a message only the SDK can answer waits for it

    def take(self, line: bytes) -> None:
        message = _parse(line)
        if message is not None and self._answered(message, line):
            return
        self.waiting = True
        self.to_sdk.append((line, None))

    def _answered(self, message: dict[str, Any], line: bytes) -> bool:
        method, params = message.get("method"), message.get("params")
        if not isinstance(method, str) or not (params is None or isinstance(params, dict)):
            return False
        if "id" not in message:  # a notification: the SDK sees it in its turn
            self.to_sdk.append((line, None))
            return True
        request_id = message["id"]
        if method == "initialize" and self.version is None and not self.waiting:
            self.version = manifest.negotiate(self.answers, params)
            if self.version is None:
                return False  # not an initialize the SDK would accept: let it say why
            self.to_sdk.append((line, request_id))
            self._reply(request_id, "initialize")
            return True
        if self.version is None or not _plain(params):
            return False
        if method in manifest.METHODS and method != "initialize":  # a second one is the SDK's
            self._reply(request_id, method)
            return True
        return False

    def _reply(self, request_id: Any, method: str) -> None:
        assert self.version is not None
        result = self.answers["versions"][self.version][method]
        if method == "initialize":
            self.given = result
        answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
        self.write(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode())


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    return message


def _plain(params: dict[str, Any] | None) -> bool:
    """No cursor (the first page: all there is), no envelope; a progress token at most, which
    these answers do not use."""
    rest = {key: value for key, value in (params or {}).items() if key != "cursor" or value}
    meta = rest.pop("_meta", {})
    return not rest and isinstance(meta, dict) and set(meta) <= {"progressToken"}


class _Relay:
    """Between the client and the SDK's stdio transport, once it runs."""

    def __init__(
        self,
        write: Callable[[bytes], None],
        replay: list[tuple[bytes, Any]],
        given: Any,
        events: queue.SimpleQueue[Event] | None,
    ) -> None:
        self.write = write
        self.replay = replay
        self.events = events  # None: the client's stdin has ended already
        self.drop: Any = None  # the id of the SDK's answer to drop, while one is awaited
        self.dropped = threading.Event()
        self.given = given  # what the front answered to that initialize

    def feed(self, send: Callable[[bytes], None]) -> None:
        for line, answer_id in self.replay:
            if answer_id is not None:
                self.drop = answer_id
            send(line)
            if answer_id is not None and not self.dropped.wait(60):
                print("coord mcp: the MCP server did not answer initialize", file=sys.stderr)
        while self.events is not None:
            kind, value = self.events.get()
            if kind != "line":
                break
            send(value)

    def take(self, line: bytes) -> None:
        if self.drop is not None and not self.dropped.is_set():
            message = _parse(line)
            if (
                message is not None
                and "method" not in message
                and _same(message.get("id"), self.drop)
            ):
                if message.get("result") != self.given:  # the manifest is not this server's
                    print(
                        f"coord mcp: the SDK answered initialize {line.decode()}", file=sys.stderr
                    )
                self.dropped.set()
                return
        self.write(line)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def run_on_pipes(
    server: Any, feed: Callable[[Callable[[bytes], None]], None], take: Callable[[bytes], None]
) -> None:
    """Run ``server.run("stdio")`` with a pipe on fd 0 and one on fd 1: ``feed(send)`` gives it
    its input lines (its return ends the input), ``take(line)`` gets each line it writes. Fd 0
    and 1 are as they were when it returns."""
    sys.stdout.flush()
    saved = os.dup(0), os.dup(1)
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    stop_read, stop_write = os.pipe()
    os.dup2(in_read, 0)
    os.dup2(out_write, 1)
    os.close(in_read)
    os.close(out_write)

    def feeding() -> None:
        def send(line: bytes) -> None:
            _write_all(in_write, line + b"\n")

        try:
            feed(send)
        except OSError:
            pass  # the SDK is gone; it ended the session
        finally:
            os.close(in_write)

    def taking() -> None:
        for line in _lines(out_read, stop_read):
            take(line)

    threads = [
        threading.Thread(target=feeding, name="mcp-to-sdk", daemon=True),
        threading.Thread(target=taking, name="mcp-from-sdk", daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        server.run("stdio")
    finally:
        os.write(stop_write, b".")  # all it wrote is in the pipe: the reader drains it and ends
        threads[1].join(10)
        sys.stdout.flush()
        for fd, was in enumerate(saved):
            os.dup2(was, fd)
            os.close(was)


def _lines(fd: int, stop: int) -> Any:
    """The lines written to ``fd``, until ``stop`` is readable and ``fd`` has nothing left."""
    pending = b""
    stopping = False
    while True:
        ready, _, _ = select.select(
            [fd] if stopping else [fd, stop], [], [], 0 if stopping else None
        )
        if fd not in ready:
            if stopping:
                return
            stopping = True
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        *lines, pending = (pending + chunk).split(b"\n")
        yield from lines


def _read(fd: int, events: queue.SimpleQueue[Event]) -> None:
    with os.fdopen(fd, "rb", closefd=False) as stream:
        for line in stream:
            events.put(("line", line.rstrip(b"\r\n")))
    events.put(("eof", None))


def _load(build: Callable[[], Any], events: queue.SimpleQueue[Event]) -> None:
    gate = os.environ.get(SDK_GATE_VAR)
    while gate and not os.path.exists(gate):
        time.sleep(0.02)
    try:
        events.put(("ready", build()))
    except BaseException:
        events.put(("failed", traceback.format_exc()))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
