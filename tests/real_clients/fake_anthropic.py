"""A scripted fake of the Anthropic Messages API on 127.0.0.1, for driving Claude Code.

Each session gets its own base URL (``server.base_url("a")`` is
``http://127.0.0.1:PORT/a``): Claude Code appends ``/v1/messages`` to ``ANTHROPIC_BASE_URL``,
so the path's first part tells the fake which session's script answers.

A script is a list of turns, one per main-loop request: turn ``i`` answers the request whose
conversation already holds ``i`` assistant messages (so a retried request gets the same
answer), with the tool calls it lists; past the script's end the model says it is done and
stops. Only the main loop follows the script: Claude Code also sends side requests (a title
for the session, a quota probe), told apart by carrying no ``Bash`` tool, and those get a
short text answer.

Every request is recorded, so a test reads what Claude Code sent back: the ``tool_result``
of each scripted call, e.g. the guard's deny reason.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-sonnet-4-5"
GATE_SECONDS = 120.0


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: dict[str, Any]


@dataclass
class ToolOutcome:
    """A scripted call and what Claude Code answered it with."""

    name: str
    input: dict[str, Any]
    result: str
    is_error: bool


@dataclass
class Gate:
    """``reached`` is set when the client asks for the gated turn; it gets its answer once
    the test sets ``opened`` (or after ``GATE_SECONDS``, so a failed test cannot hang)."""

    reached: threading.Event = field(default_factory=threading.Event)
    opened: threading.Event = field(default_factory=threading.Event)


@dataclass
class Recorded:
    method: str
    path: str
    session: str
    body: dict[str, Any] = field(default_factory=dict)


class FakeAnthropic:
    def __init__(self) -> None:
        self.scripts: dict[str, list[list[ToolCall]]] = {}
        self.requests: list[Recorded] = []
        self.gates: dict[tuple[str, int], Gate] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def base_url(self, session: str) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/{session}"

    def script(self, session: str, turns: list[list[ToolCall]]) -> None:
        self.scripts[session] = turns

    def gate(self, session: str, turn: int) -> Gate:
        """Hold the answer to the session's turn ``turn`` until the test opens the gate."""
        self.gates[(session, turn)] = gate = Gate()
        return gate

    def main_requests(self, session: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                r.body
                for r in self.requests
                if r.session == session and r.path.endswith("/v1/messages") and _is_main(r.body)
            ]

    def outcomes(self, session: str) -> list[ToolOutcome]:
        """Every scripted call of the session, in order, with the tool_result it got back."""
        requests = self.main_requests(session)
        if not requests:
            return []
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        results: dict[str, tuple[str, bool]] = {}
        for message in max(requests, key=lambda b: len(b.get("messages", [])))["messages"]:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") == "tool_use":
                    calls[block["id"]] = (block["name"], block["input"])
                elif block.get("type") == "tool_result":
                    results[block["tool_use_id"]] = (
                        _text(block.get("content")),
                        bool(block.get("is_error")),
                    )
        return [
            ToolOutcome(name, tool_input, *results.get(call_id, ("<no result>", True)))
            for call_id, (name, tool_input) in calls.items()
        ]

    # --- answering -------------------------------------------------------------------

    def _answer(self, session: str, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """The content blocks of the reply and its stop reason."""
        if not _is_main(body):
            return [{"type": "text", "text": "Fake session"}], "end_turn"
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        gate = self.gates.get((session, turn))
        if gate is not None:
            gate.reached.set()
            gate.opened.wait(GATE_SECONDS)
        script = self.scripts.get(session, [])
        if turn >= len(script):
            return [{"type": "text", "text": "done"}], "end_turn"
        blocks = [
            {
                "type": "tool_use",
                "id": f"toolu_{session}_{turn}_{i}",
                "name": call.name,
                "input": call.input,
            }
            for i, call in enumerate(script[turn])
        ]
        return blocks, "tool_use"

    def _record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)


def _is_main(body: dict[str, Any]) -> bool:
    return any(t.get("name") == "Bash" for t in body.get("tools") or [])


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _sse(blocks: list[dict[str, Any]], stop_reason: str, message_id: str) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": MODEL,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in events).encode()


def _handler_for(fake: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test reads fake.requests; stderr noise helps nobody

        def _session_and_path(self) -> tuple[str, str]:
            path = self.path.split("?", 1)[0]
            session, _, rest = path.lstrip("/").partition("/")
            return session, "/" + rest

        def _json(self, status: int, data: Any) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            session, path = self._session_and_path()
            fake._record(Recorded("GET", path, session))
            if path.startswith("/v1/models"):
                model = {"type": "model", "id": MODEL, "display_name": "Fake", "created_at": ""}
                self._json(200, {"data": [model], "has_more": False})
                return
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            session, path = self._session_and_path()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            fake._record(Recorded("POST", path, session, body))
            if path.endswith("/v1/messages/count_tokens"):
                self._json(200, {"input_tokens": 100})
                return
            if not path.endswith("/v1/messages"):
                self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
                return
            blocks, stop_reason = fake._answer(session, body)
            message_id = f"msg_{session}_{len(fake.requests)}"
            if not body.get("stream"):
                self._json(
                    200,
                    {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": MODEL,
                        "content": blocks,
                        "stop_reason": stop_reason,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5},
                    },
                )
                return
            raw_events = _sse(blocks, stop_reason, message_id)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(raw_events)))
            self.end_headers()
            self.wfile.write(raw_events)

    return Handler
