"""The live event stream, GET /v1/events/stream (issue 17, item 1), against a real daemon.

Every event once, in order, resumable with Last-Event-ID after a dropped connection and after
a daemon killed with -9; a reader that stops reading neither holds up writers nor makes the
daemon buffer without bound; keep-alives, the item filter, the token, a reader told to reload;
`coord stop` ends the streams; the client reader (coord.client.stream) and `coord log
--follow` across a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, follow_log, init_board_dir, run_cli
from coord.client.http import Client
from coord.client.stream import Interrupted, Reload, Resumed, follow
from coord.core.board import Board
from coord.fast import board_files
from coord.limits import MAX_STREAM_BEHIND
from coord.server.feed import FEED_BYTES

WAIT = 60.0  # seconds a test waits for what must come; never a timing assertion


class Stream:
    """One raw SSE connection, read with http.client (chunked) line by line."""

    def __init__(
        self,
        daemon: Daemon,
        query: str = "",
        headers: dict[str, str] | None = None,
        token: str | None = "default",
    ) -> None:
        host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=WAIT)
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {daemon.token if token == 'default' else token}"
        self.conn.request("GET", "/v1/events/stream" + query, headers=sent)
        self.response = self.conn.getresponse()

    def messages(self) -> Iterator[dict[str, str]]:
        """Each message as {"event", "data", "id"}, and each comment as {"comment"}; ends
        with the stream."""
        message: dict[str, str] = {}
        while True:
            line = self.response.readline()
            if not line:
                return
            text = line.decode().rstrip("\n")
            if not text:
                if "data" in message:
                    yield {"event": "message", **message}
                message = {}
            elif text.startswith(":"):
                yield {"comment": text[1:].strip()}
            else:
                name, _, value = text.partition(": ")
                message[name] = value

    def events(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` board events (comments skipped), checked to be well framed."""
        found = []
        for message in self.messages():
            if "comment" in message:
                continue
            assert message["event"] == "coord", message
            event = json.loads(message["data"])
            assert message["id"] == str(event["seq"])
            found.append(event)
            if len(found) == count:
                return found
        raise AssertionError(f"the stream ended after {len(found)} of {count} events")

    def close(self) -> None:
        self.response.close()
        self.conn.close()


def add(daemon: Daemon, title: str, agent: str = "ann") -> dict[str, Any]:
    status, item = daemon.request("POST", "/v1/items", {"agent": agent, "title": title})
    assert status == 201, item
    return item


def logged(daemon: Daemon, after: int = 0) -> list[dict[str, Any]]:
    status, answer = daemon.request("GET", f"/v1/events?after={after}&limit=5000")
    assert status == 200, answer
    return answer["events"]


def test_each_event_once_in_order_and_a_reconnect_gets_exactly_the_missed_ones(
    daemon: Daemon,
) -> None:
    for title in ("one", "two", "three"):
        add(daemon, title)
    first = Stream(daemon, "?keepalive=0.2")
    assert first.response.status == 200
    assert first.response.getheader("content-type", "").startswith("text/event-stream")
    assert first.response.getheader("cache-control") == "no-store"
    assert first.events(3) == logged(daemon)  # the very events of the log
    first.close()

    add(daemon, "four")  # while nobody listens
    add(daemon, "five")
    # Last-Event-ID wins over after
    again = Stream(daemon, "?after=0&keepalive=0.2", headers={"Last-Event-ID": "3"})
    assert [e["seq"] for e in again.events(2)] == [4, 5]
    add(daemon, "six")
    got = []
    for message in again.messages():  # up to the first keep-alive after the live event
        if "comment" in message and got:
            break
        if "data" in message:
            got.append(json.loads(message["data"])["seq"])
    again.close()
    assert got == [6]  # nothing again, nothing missed


def test_a_head_request_gets_the_headers_and_ends(daemon: Daemon) -> None:
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("HEAD", "/v1/events/stream", headers={"Authorization": f"Bearer {daemon.token}"})
    answer = conn.getresponse()
    assert answer.status == 200 and answer.read() == b""
    assert answer.getheader("content-type", "").startswith("text/event-stream")
    conn.request("GET", "/v1/health")  # the same connection: the HEAD's answer is complete
    assert conn.getresponse().status == 200
    conn.close()


def test_a_keep_alive_comes_while_nothing_happens(daemon: Daemon) -> None:
    stream = Stream(daemon, "?keepalive=0.1")
    comments = []
    for message in stream.messages():
        assert "comment" in message, message  # no event on a quiet board
        comments.append(message["comment"])
        if "keep-alive" in comments:
            break
    stream.close()
    assert comments[-1] == "keep-alive"


def test_the_item_filter_passes_that_items_events_only(daemon: Daemon) -> None:
    one, two = add(daemon, "one"), add(daemon, "two")
    stream = Stream(daemon, f"?item={two['id']}")
    assert [(e["item_id"], e["kind"]) for e in stream.events(1)] == [(two["id"], "created")]
    daemon.request("POST", f"/v1/items/{one['id']}/claim", {"agent": "bob"})
    daemon.request("POST", f"/v1/items/{two['id']}/claim", {"agent": "bob"})
    (claimed,) = stream.events(1)
    stream.close()
    assert (claimed["item_id"], claimed["kind"]) == (two["id"], "claimed")


def test_the_stream_needs_the_token_and_says_what_is_wrong(daemon: Daemon) -> None:
    for token in (None, "wrong"):
        refused = Stream(daemon, token=token)
        assert refused.response.status == 401
        assert json.loads(refused.response.read())["error"] == "unauthorized"
        refused.close()
    for query, headers, field in (
        ("?after=-1", {}, "after"),
        ("?after=x", {}, "after"),
        ("", {"Last-Event-ID": "nope"}, "Last-Event-ID"),
        ("?keepalive=0", {}, "keepalive"),
        ("?item=abc", {}, "item"),  # the parameter the document declares
    ):
        bad = Stream(daemon, query, headers=headers)
        assert bad.response.status == 422, query
        answer = json.loads(bad.response.read())
        assert answer["error"] == "invalid_input" and answer["field"] == field, answer
        bad.close()


def _import(daemon: Daemon, items: list[dict[str, Any]]) -> None:
    status, answer = daemon.request("POST", "/v1/items:import", {"agent": "bulk", "items": items})
    assert status == 201, answer


def _many_events(daemon: Daemon, count: int) -> None:
    for start in range(0, count, 10_000):
        _import(daemon, [{"title": f"t{n}"} for n in range(start, min(count, start + 10_000))])


def test_a_reader_too_far_behind_is_told_to_reload_and_the_stream_ends(daemon: Daemon) -> None:
    _many_events(daemon, MAX_STREAM_BEHIND + 50)
    newest = logged(daemon, MAX_STREAM_BEHIND + 40)[-1]["seq"]
    stream = Stream(daemon, "?after=0")
    messages = [m for m in stream.messages() if "comment" not in m]  # to the stream's end
    stream.close()
    assert [m["event"] for m in messages] == ["reload"]
    said = json.loads(messages[0]["data"])
    assert said["last_seq"] == newest and "behind" in said["reason"]
    near = Stream(daemon, f"?after={newest - 5}")  # close behind: the events themselves
    assert [e["seq"] for e in near.events(5)] == list(range(newest - 4, newest + 1))
    near.close()
    # the client reader hands the reload to its caller and ends
    said_again = list(follow(Client(daemon.board_dir, autostart=False), after=0))
    assert len(said_again) == 1 and isinstance(said_again[0], Reload), said_again
    assert said_again[0].last_seq == newest


def test_a_reader_far_back_meets_the_live_feed_with_nothing_lost_or_doubled(
    daemon: Daemon,
) -> None:
    """The newest events come from the daemon's shared feed (a few thousand), older ones from
    the board: a reader that starts further back than the feed reaches crosses the seam."""
    live = Stream(daemon, "?keepalive=0.2")  # keeps the feed running while the log grows
    total = 6_000  # more than the feed keeps (feed.FEED_EVENTS)
    _many_events(daemon, total)
    one = add(daemon, "one")["id"]
    assert [e["seq"] for e in live.events(total + 1)] == list(range(1, total + 2))
    behind = Stream(daemon, "?after=0")
    only_one = Stream(daemon, f"?after=0&item={one}")
    daemon.request("POST", f"/v1/items/{one}/claim", {"agent": "bob"})  # while they catch up
    assert [e["seq"] for e in behind.events(total + 2)] == list(range(1, total + 3))
    assert [e["kind"] for e in only_one.events(2)] == ["created", "claimed"]
    for stream in (live, behind, only_one):
        stream.close()


def test_a_write_by_another_process_reaches_the_stream(daemon: Daemon) -> None:
    """Only this daemon's own writes wake a stream at once; the rest are found by the poll."""
    stream = Stream(daemon)
    board = Board.open(daemon.board_dir)
    try:
        board.add("written beside the daemon", created_by="lib")
    finally:
        board.close()
    (event,) = stream.events(1)
    stream.close()
    assert (event["kind"], event["agent"]) == ("created", "lib")


def test_an_open_stream_keeps_an_idle_daemon_and_it_goes_once_closed(board_dir: Path) -> None:
    env = {**os.environ, "COORD_DIR": str(board_dir)}
    process = subprocess.Popen(
        [sys.executable, "-m", "coord", "serve", "--idle-exit", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        daemon = Daemon(board_dir)
        deadline = time.monotonic() + WAIT
        while not daemon.url and time.monotonic() < deadline:
            record = board_dir / "daemon.json"
            if record.exists():
                daemon.url = json.loads(record.read_text())["url"]
            time.sleep(0.05)
        daemon.token = board_files.read_token(board_dir)
        stream = Stream(daemon, "?keepalive=0.5")
        time.sleep(3)  # three idle-exit periods
        assert process.poll() is None  # the open stream is activity
        stream.close()
        assert process.wait(WAIT) == 0  # and without it the daemon idles out
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


TCP_ESTABLISHED = 1


def _tcp_state(sock: socket.socket) -> int:
    """The connection's state as the kernel sees it (tcp_info's first byte)."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


# An edit's event keeps the old body whole: ~64 KB an event, ~64 MB in all, while what one
# request makes the daemon hold stays small (its RSS does not move without a stream).
BIG_BODY = 60_000
BIG_EDITS = 1000


def _edit_big(daemon: Daemon, item_id: int, n: int) -> None:
    body = {"agent": "ann", "body": chr(ord("a") + n % 26) * BIG_BODY}
    status, answer = daemon.request("PATCH", f"/v1/items/{item_id}", body)
    assert status == 200, answer


def test_a_stalled_reader_neither_blocks_writers_nor_grows_the_daemon(daemon: Daemon) -> None:
    assert daemon.process is not None
    item = add(daemon, "edited often")
    for n in range(20):  # warm the daemon's allocator and caches up
        _edit_big(daemon, item["id"], n)
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    with socket.socket() as stalled:
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect((host, int(port)))
        stalled.sendall(
            f"GET /v1/events/stream?after=0 HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {daemon.token}\r\n\r\n".encode()
        )
        stalled.settimeout(WAIT)
        assert stalled.recv(12) == b"HTTP/1.1 200"  # a stream; from here on, it never reads
        before = _rss_kb(daemon.process.pid)

        for n in range(BIG_EDITS):  # every write completes while the reader stalls
            _edit_big(daemon, item["id"], n)
        pushed_mb = BIG_EDITS * BIG_BODY / 1e6
        added = run_cli("add", "from the CLI", board_dir=daemon.board_dir, agent="cli")
        assert added.returncode == 0, added.stderr
        grown_mb = (_rss_kb(daemon.process.pid) - before) / 1024
        print(f"\ndaemon RSS grew {grown_mb:.1f} MB while ~{pushed_mb:.0f} MB of events passed")
        # the daemon's one feed of the newest events (shared by all streams) and some slack:
        # a buffer for the reader that grew without bound would hold all ~60 MB
        bound_mb = FEED_BYTES / 2**20 + 16
        assert grown_mb < bound_mb, f"grew {grown_mb:.1f} MB for {pushed_mb:.0f} MB of events"

        _many_events(daemon, MAX_STREAM_BEHIND + 10)  # far past what a stream may be behind
        # the daemon lets the stalled reader go by itself: reset, not left to the kernel
        deadline = time.monotonic() + WAIT
        while _tcp_state(stalled) == TCP_ESTABLISHED and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _tcp_state(stalled) != TCP_ESTABLISHED, "the stalled reader was not cut"
        received = bytearray()
        with contextlib.suppress(ConnectionResetError):
            while chunk := stalled.recv(1 << 20):
                received += chunk
    newest = logged(daemon, MAX_STREAM_BEHIND)[-1]["seq"]
    assert f"id: {newest}\n".encode() not in received  # it never got the rest
    assert daemon.request("GET", "/v1/health")[0] == 200


def test_coord_stop_ends_the_streams_at_once(board_dir: Path) -> None:
    daemon = Daemon(board_dir).start()
    add(daemon, "one")
    stream = Stream(daemon, "?keepalive=60")
    assert len(stream.events(1)) == 1
    stopped = run_cli("stop", board_dir=board_dir)
    assert stopped.returncode == 0, stopped.stderr
    assert [m for m in stream.messages() if "comment" not in m] == []  # the stream's end
    stream.close()
    assert daemon.process is not None and daemon.process.wait(WAIT) == 0
    # not held to uvicorn's graceful-shutdown timeout and cancelled there
    assert "graceful shutdown exceeded" not in daemon.log_path.read_text()


def _reader(client: Client, after: int, out: queue.Queue[Any]) -> None:
    try:
        for message in follow(client, after=after, keepalive=0.5):
            out.put(message)
    except Exception as err:  # the test fails on it
        out.put(err)


def _take(out: queue.Queue[Any], kind: type) -> Any:
    message = out.get(timeout=WAIT)
    assert isinstance(message, kind), message
    return message


def test_the_reader_resumes_across_a_daemon_killed_and_restarted(board_dir: Path) -> None:
    first = Daemon(board_dir).start()
    add(first, "one")
    add(first, "two")
    out: queue.Queue[Any] = queue.Queue()
    client = Client(board_dir, autostart=False)
    threading.Thread(target=_reader, args=(client, 0, out), daemon=True).start()
    assert [_take(out, dict)["seq"] for _ in range(2)] == [1, 2]
    first.kill9()
    assert isinstance(_take(out, Interrupted), Interrupted)
    board = Board.open(board_dir)  # written while no daemon runs: durable in the board
    for title in ("three", "four"):
        board.add(title, created_by="lib")
    board.close()
    second = Daemon(board_dir).start()
    try:
        _take(out, Resumed)
        add(second, "five")
        assert [_take(out, dict)["seq"] for _ in range(3)] == [3, 4, 5]
        time.sleep(1.5)  # a few keep-alives: nothing more may come
        assert out.empty(), out.get()
    finally:
        second.stop()


def _lines_of(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's output lines as they come (a thread reads them: no pipe buffer games)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        process.stdout.close()

    threading.Thread(target=read, daemon=True).start()
    return lines


def test_log_follow_shows_every_event_once_across_a_kill_and_restart(board_dir: Path) -> None:
    first = Daemon(board_dir).start()
    follower = follow_log(board_dir)
    lines = _lines_of(follower)

    def next_seq() -> int:
        return int(json.loads(lines.get(timeout=WAIT))["seq"])

    try:
        add(first, "one")
        add(first, "two")
        assert [next_seq(), next_seq()] == [1, 2]
        first.kill9()  # no goodbye: the connection just breaks
        for title in ("three", "four"):  # the first starts the next daemon on demand
            added = run_cli("add", title, board_dir=board_dir, agent="ann")
            assert added.returncode == 0, added.stderr
        assert [next_seq(), next_seq()] == [3, 4]
        added = run_cli("add", "five", board_dir=board_dir, agent="ann")
        assert next_seq() == 5
        time.sleep(1.0)
        assert lines.empty(), lines.get()  # nothing doubled
    finally:
        follower.send_signal(signal.SIGINT)
        follower.wait(WAIT)
        run_cli("stop", board_dir=board_dir)
    assert follower.stderr is not None
    said = follower.stderr.read()
    follower.stderr.close()
    assert follower.returncode == 130
    assert "reconnecting" in said and "Traceback" not in said, said


def test_log_follow_pages_the_log_when_the_stream_says_reload(daemon: Daemon) -> None:
    _many_events(daemon, MAX_STREAM_BEHIND + 20)
    follower = follow_log(daemon.board_dir)
    assert follower.stdout is not None
    try:
        seen = [
            int(json.loads(follower.stdout.readline())["seq"])
            for _ in range(MAX_STREAM_BEHIND + 20)
        ]
        add(daemon, "live")
        seen.append(int(json.loads(follower.stdout.readline())["seq"]))
    finally:
        follower.send_signal(signal.SIGINT)
        follower.communicate(timeout=WAIT)
    assert seen == list(range(1, MAX_STREAM_BEHIND + 22))


# --- in process: the stream over either backend ---------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_board(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Board]:
    if request.param == "sqlite":
        board = Board.open(init_board_dir(tmp_path))
    else:
        from pg_support import open_storage

        dsn = request.getfixturevalue("pg_dsn")
        board = Board(open_storage(dsn), repo_root=tmp_path)
    yield board
    board.close()


def test_the_stream_reads_either_backend_the_same_way(any_board: Board) -> None:
    """Nothing in the stream is the backend's: it reads Board.events and waits on Changes,
    with a poll for writes nobody announces (another process, another daemon)."""
    from coord.server.context import Call, Server
    from coord.server.stream import events_stream

    for title in ("one", "two"):
        any_board.add(title, created_by="ann")
    server = Server(any_board, "token")
    call = Call(server, query={"after": "1", "keepalive": "0.05"})
    sent: list[bytes] = []
    ended = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await ended.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])
            if not message.get("more_body"):
                ended.set()

    def seqs() -> list[int]:
        found = re.findall(rb"(?m)^id: (\d+)$", b"".join(sent))
        return [int(n) for n in found]

    async def until(predicate: Any) -> None:
        for _ in range(int(WAIT / 0.01)):
            if predicate():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"not reached: {b''.join(sent)!r}")

    async def go() -> None:
        stream = asyncio.ensure_future(events_stream(call)({}, receive, send))
        await until(lambda: seqs() == [2])
        any_board.add("announced", created_by="ann")
        server.changes.notify()  # as the pipeline does after a write
        await until(lambda: seqs() == [2, 3])
        any_board.add("unannounced", created_by="ann")  # found by the poll
        await until(lambda: seqs() == [2, 3, 4])
        await until(lambda: b": keep-alive" in b"".join(sent))
        server.close_streams()  # the daemon stops
        await asyncio.wait_for(stream, WAIT)

    asyncio.run(go())
    assert seqs() == [2, 3, 4] and ended.is_set()


def test_the_client_reads_messages_however_the_bytes_are_cut() -> None:
    """The reader's chunked and SSE parsing, against every place TCP could split the bytes."""
    from coord.client.stream import _messages

    body = (
        b"retry: 1000\n: coord event stream after 0\n\n"
        b'id: 1\nevent: coord\ndata: {"seq":1,"t":"a\\nb"}\n\n: keep-alive\n\n'
        b'id: 2\nevent: coord\ndata: {"seq":2}\n\nevent: reload\ndata: {"last_seq":9}\n\n'
    )
    pieces = [body[:40], body[40:97], body[97:]]  # as the daemon sends chunks
    wire = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    expected = [
        ("coord", '{"seq":1,"t":"a\\nb"}', "1"),
        ("coord", '{"seq":2}', "2"),
        ("reload", '{"last_seq":9}', "2"),
    ]

    class Wire:
        def __init__(self, parts: list[bytes]) -> None:
            self.parts = parts

        def recv(self, size: int) -> bytes:
            return self.parts.pop(0) if self.parts else b""

    for cut in range(1, len(wire)):
        for first in (b"", wire[:1]):  # what came with the answer's head, or nothing
            rest = wire[len(first) :]
            at = max(cut - len(first), 1)
            got = list(_messages(Wire([rest[:at], rest[at:]]), first))
            assert got == expected, (cut, first)
