"""A scripted fake of the OpenAI Responses API on 127.0.0.1, for driving Codex CLI headless.

Codex (a custom model provider with ``wire_api = "responses"``) sends ``POST /v1/responses``
with the whole conversation so far in ``input`` and reads the answer as server-sent events:
``response.created``, one ``response.output_item.done`` per output item (an assistant
message, a ``function_call``, a ``custom_tool_call``), then ``response.completed``. Those
shapes are the ones Codex's own test mocks build (openai/codex
``codex-rs/core/tests/common/responses.rs``: ``sse``, ``ev_response_created``,
``ev_function_call``, ``ev_apply_patch_custom_tool_call``, ``ev_completed``).

A script is a list of turns, each a list of output items, chosen by a marker word the test puts
in the prompt (so two Codex sessions can share one server). The turn is the number of tool
results already in ``input``: turn 0 answers the prompt, turn 1 answers the first tool result,
and so on; after the last scripted turn the model says it is done. Every request is kept
(``requests``), and ``tool_output(call_id)`` finds what a tool call returned to the model,
which is where Codex puts a hook's refusal.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Item = dict[str, Any]

# the input items that carry a tool's result back to the model
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})


def apply_patch(call_id: str, patch: str) -> Item:
    """Codex's freeform ``apply_patch`` tool called with the raw patch text."""
    return {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": call_id}


def function_call(call_id: str, name: str, arguments: dict[str, Any]) -> Item:
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(arguments),
        "call_id": call_id,
    }


def tool_search(call_id: str, query: str) -> Item:
    """Codex's client-side ``tool_search``: since 0.17x it defers every MCP tool behind it (the
    first request lists ``tool_search``, not the servers' tools), and answers the call with a
    ``tool_search_output`` item holding the matching tools, by namespace."""
    return {
        "type": "tool_search_call",
        "call_id": call_id,
        "execution": "client",
        "status": "completed",
        "arguments": {"query": query, "limit": 20},
    }


def message(text: str) -> Item:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


class FakeOpenAI:
    """The server; use as a context manager. ``base_url`` is what Codex's provider takes."""

    def __init__(self, scripts: dict[str, list[list[Item]]]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def tool_output(self, call_id: str) -> str:
        """What the tool call ``call_id`` returned to the model (its output text)."""
        with self._lock:
            requests = list(self.requests)
        for body in requests:
            for item in body.get("input", []):
                if item.get("type") in _OUTPUT_TYPES and item.get("call_id") == call_id:
                    return _output_text(item.get("output"))
        raise AssertionError(f"the model never got a result for tool call {call_id}")

    def answer(self, body: dict[str, Any]) -> list[Item]:
        with self._lock:
            self.requests.append(body)
        inputs = body.get("input", [])
        text = json.dumps([i for i in inputs if i.get("role") == "user"])
        script = next((s for marker, s in self.scripts.items() if marker in text), None)
        turn = sum(1 for i in inputs if i.get("type") in _OUTPUT_TYPES)
        if script is None or turn >= len(script):
            return [message("done")]
        return script[turn]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/responses"):
                    self._send(404, "application/json", b'{"error": {"message": "not here"}}')
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    encoding = self.headers.get("Content-Encoding")
                    message = f"request body is not JSON (Content-Encoding: {encoding})"
                    self._send(400, "application/json", json.dumps({"error": message}).encode())
                    return
                self._send(200, "text/event-stream", _sse(fake.answer(body)))

            def do_GET(self) -> None:  # the model list: none, so Codex keeps its own defaults
                self._send(200, "application/json", b'{"object": "list", "data": []}')

            def _send(self, status: int, kind: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output for the test

        return Handler


def _sse(items: list[Item]) -> bytes:
    response_id = "resp-fake"
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": response_id}}]
    events += [{"type": "response.output_item.done", "item": item} for item in items]
    usage = {
        "input_tokens": 0,
        "input_tokens_details": None,
        "output_tokens": 0,
        "output_tokens_details": None,
        "total_tokens": 0,
    }
    events.append({"type": "response.completed", "response": {"id": response_id, "usage": usage}})
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _output_text(output: Any) -> str:
    """A tool output is a string, or a list of content items with text."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(str(part.get("text", "")) for part in output if isinstance(part, dict))
    if isinstance(output, dict):
        return _output_text(output.get("content", output.get("output", "")))
    return str(output)
