"""The open page and another user who takes its daemon's port once the daemon stops.

The squatter is a plain HTTP server (not coord) run as a second uid made for the test
(``tests/other_user.py``), bound to the port the stopped daemon had, answering every request
with 200 and JSON shaped like the daemon's, and writing down each request it got. The page
must send it nothing that opens the board: no cookie, no session, no token.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.conftest import Daemon

from other_user import OtherUser

from .conftest import Browser, open_page

SQUATTER = r"""
import json, socket, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

port, seen_path = int(sys.argv[1]), sys.argv[2]
seen = open(seen_path, "a", buffering=1)

class Answer(BaseHTTPRequestHandler):
    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode(errors="replace") if length else ""
        seen.write(json.dumps({"method": self.command, "path": self.path,
                               "headers": {k.lower(): v for k, v in self.headers.items()},
                               "body": body}) + "\n")
        payload = json.dumps({"proof": "0" * 64, "instance": "f" * 32, "items": [],
                              "events": [], "agents": [], "reservations": [], "next": None,
                              "last_seq": 0, "as": "alice", "server_now": time.time(),
                              "board": {"counts": {}}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_HEAD = _answer

    def log_message(self, *args):
        pass

class Server(HTTPServer):
    allow_reuse_address = True

deadline = time.monotonic() + 20
while True:
    try:
        server = Server(("127.0.0.1", port), Answer)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.01)
print("bound", flush=True)
server.serve_forever()
"""


def requests_seen(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_squatter_on_the_old_port_gets_nothing_from_the_page(
    served: Daemon, browser: Browser, other_user: OtherUser
) -> None:
    open_page(served, browser)
    port = int(served.url.rsplit(":", 1)[1])
    token = served.token
    served.stop()
    seen = other_user.home / "seen.jsonl"
    squatter = other_user.python(SQUATTER, str(port), str(seen), stdout=-1)
    assert squatter.stdout is not None and squatter.stdout.readline().strip() == "bound"

    # the page notices and tries the port again
    deadline = time.monotonic() + 20
    while not requests_seen(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # a few more of the page's reconnect rounds, had it gone on
    got = requests_seen(seen)
    assert got, "the page never came back to its port"
    credentials = [
        (r["method"], r["path"], name)
        for r in got
        for name in ("cookie", "authorization", "x-coord-session", "x-coord-csrf")
        if name in r["headers"]
    ]
    assert credentials == [], f"the squatter got the page's credentials: {credentials}"
    assert all(token not in json.dumps(r) for r in got)
    # it was asked to prove itself, and nothing else
    assert {r["path"].split("?")[0] for r in got} <= {"/v1/web/proof"}, got
    # and it found a stranger there: it says so, and what to do
    link = browser.eval("document.getElementById('link').textContent")
    assert "coord open" in link and "not the one this page signed in to" in link, link
    assert browser.eval("document.getElementById('link').dataset.state") == "lost"
