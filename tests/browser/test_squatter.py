"""The open page and another local user: one who takes its daemon's port once the daemon
stops, and one who serves something on another port of 127.0.0.1 while it runs.

The squatter is a plain HTTP server (not coord) run as a second uid made for the test
(``tests/other_user.py``), bound to the port the stopped daemon had, answering every request
with 200 and JSON shaped like the daemon's, and writing down each request it got. The page
must send it nothing that opens the board: no cookie, no session, no token.
"""

from __future__ import annotations

import json
import time

from tests.conftest import Daemon

from other_user import OtherUser, requests_seen

from .conftest import Browser, free_port, open_page


def test_a_squatter_on_the_old_port_gets_nothing_from_the_page(
    served: Daemon, browser: Browser, other_user: OtherUser
) -> None:
    open_page(served, browser)
    port = int(served.url.rsplit(":", 1)[1])
    token = served.token
    served.stop()
    _, seen = other_user.squat(port)

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


def test_another_port_of_the_host_gets_nothing_of_the_page(
    served: Daemon, browser: Browser, other_user: OtherUser
) -> None:
    """Cookies ignore ports (RFC 6265 §8.5): a browser visiting another user's server on
    another port of 127.0.0.1 while the page's daemon runs must bring it nothing of the page."""
    open_page(served, browser)
    other_port = free_port()
    _, seen = other_user.squat(other_port)
    browser.do("goto", url=f"http://127.0.0.1:{other_port}/")
    browser.eval("fetch('/v1/items').then(r => r.status)")  # that page's own request too
    got = requests_seen(seen)
    assert len(got) >= 2, got
    assert [r["headers"].get("cookie") for r in got] == [None] * len(got)
    assert all("x-coord-session" not in r["headers"] for r in got)
    assert all(served.token not in json.dumps(r) for r in got)
