"""What another local user can take from `coord open` and the page: nothing.

Run as root with a second uid made for the test (``tests/other_user.py``). Real processes
throughout: the `coord` command, its daemon, a browser command (``$BROWSER``, a script that
does what a browser does with what it is given) and, as the other user, a scanner reading
every ``/proc/*/cmdline`` and ``/proc/*/environ`` it can while the browser runs.
"""

from __future__ import annotations

import base64
import hmac
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

from tests.conftest import Daemon, init_board_dir, run_cli

from other_user import OtherUser, requests_seen

SESSION = "x-coord-session"

# As the other user: every cmdline and environ it can read, again and again until told to
# stop, and an attempt to read each file:// path a browser's command line names. Once it has
# seen the browser and scanned the whole of /proc after that, it says so (the browser waits
# for that, so the scan surely happened while the browser ran).
SCANNER = r"""
import json, os, sys, time, urllib.parse
out, stop, scanned = sys.argv[1:4]
seen, reads, sighted = set(), {}, False
while not os.path.exists(stop):
    now_sighted = False
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            seen.add((what, data.decode("latin-1")))
            if what == "cmdline" and b"fake-browser" in data:
                now_sighted = True
                for arg in data.split(b"\0"):
                    if arg.startswith(b"file://"):
                        path = urllib.parse.unquote(arg[len(b"file://"):].decode())
                        try:
                            with open(path, "rb") as f:
                                reads[path] = "read " + f.read().decode("latin-1")
                        except OSError as err:
                            reads[path] = err.strerror
    if now_sighted and sighted:
        open(scanned, "w").close()
    sighted = sighted or now_sighted
    time.sleep(0.01)
with open(out, "w") as f:
    json.dump({"seen": sorted(seen), "reads": reads}, f)
"""

# The browser `coord open` starts: it waits until the scanner has seen it, then opens what
# it was given as a browser would (a file:// page that redirects, or a link), once, and
# writes down what it found.
FAKE_BROWSER = r"""
import http.client, json, os, re, stat, sys, time, urllib.parse
given = sys.argv[1]
deadline = time.monotonic() + 20
while not os.path.exists(os.environ["FAKE_BROWSER_SCANNED"]) and time.monotonic() < deadline:
    time.sleep(0.02)
found = {"given": given}
target = given
if given.startswith("file://"):
    path = urllib.parse.unquote(given[len("file://"):])
    found["file_mode"] = stat.S_IMODE(os.stat(path).st_mode)
    found["dir_mode"] = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)
    found["file"] = path
    text = open(path).read()
    target = re.search(r'url=([^"]+)"', text).group(1).replace("&amp;", "&")
found["target"] = target
# as root: every process's arguments and environment, the ones no other user may read too
code = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)["code"][0]
found["holding_the_code"] = []
for pid in os.listdir("/proc"):
    for what in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{what}", "rb") as f:
                if code.encode() in f.read():
                    found["holding_the_code"].append(f"{pid}/{what}")
        except OSError:
            pass
url = urllib.parse.urlsplit(target)
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
conn.request("GET", f"{url.path}?{url.query}")
answer = conn.getresponse()
answer.read()
found["status"] = answer.status
with open(os.environ["FAKE_BROWSER_OUT"], "w") as f:
    json.dump(found, f)
"""


def open_in_fake_browser(daemon: Daemon, tmp_path: Path, user: OtherUser) -> dict[str, Any]:
    """`coord open` with the fake browser, scanned by the other user the while; what each
    saw."""
    browser = tmp_path / "fake-browser"
    browser.write_text(f"#!{sys.executable}\n{FAKE_BROWSER}")
    browser.chmod(0o700)
    stop, scanned, seen = user.home / "stop", user.home / "scanned", user.home / "seen.json"
    scanner = user.python(SCANNER, str(seen), str(stop), str(scanned))
    out = tmp_path / "browser.json"
    env = {
        "BROWSER": str(browser),
        "DISPLAY": ":0",  # a display to show on: `coord open` opens a browser only then
        "FAKE_BROWSER_SCANNED": str(scanned),
        "FAKE_BROWSER_OUT": str(out),
    }
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_CURRENT_TEST")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "coord", "open", "--as", "alice", "--json"],
            env={**base, "COORD_DIR": str(daemon.board_dir), **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        stop.touch()
        scanner.wait(30)
    assert done.returncode == 0, done.stderr
    return {
        "open": json.loads(done.stdout),
        "browser": json.loads(out.read_text()),
        "scan": json.loads(seen.read_text()),
    }


def test_the_code_is_in_no_command_line_nor_environment(
    daemon: Daemon, tmp_path: Path, other_user: OtherUser
) -> None:
    found = open_in_fake_browser(daemon, tmp_path, other_user)
    opened, browser, scan = found["open"], found["browser"], found["scan"]
    assert opened["opened"] is True
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(opened["url"]).query)["code"][0]
    assert len(code) >= 16
    # the scanner did read command lines, the browser's among them
    assert any("fake-browser" in text for what, text in scan["seen"] if what == "cmdline")
    leaked = [(what, text[:200]) for what, text in scan["seen"] if code in text]
    assert leaked == [], f"the one-time code is readable by another user in: {leaked}"
    token = daemon.token
    assert [what for what, text in scan["seen"] if token in text] == []
    # the browser got a file only its owner may read, and the page opened from it
    assert browser["given"].startswith("file://"), browser
    assert code in browser["target"] and browser["status"] == 200
    assert browser["holding_the_code"] == []  # not even where only root may look
    assert browser["file_mode"] == 0o600 and browser["dir_mode"] == 0o700
    assert scan["reads"] == {browser["file"]: "Permission denied"}


def test_the_redirect_file_goes_once_used(
    daemon: Daemon, tmp_path: Path, other_user: OtherUser
) -> None:
    browser = open_in_fake_browser(daemon, tmp_path, other_user)["browser"]
    assert browser.get("file"), browser
    deadline = time.monotonic() + 5
    while Path(browser["file"]).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(browser["file"]).exists()
    # and the code it held is spent
    url = urllib.parse.urlsplit(browser["target"])
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    conn.request("GET", f"{url.path}?{url.query}")
    assert conn.getresponse().status == 401
    conn.close()
    assert re.fullmatch(r"[0-9a-f]+\.html", Path(browser["file"]).name)


def free_port() -> int:
    """A port to start a daemon on, and again on after it stops (as `coord serve --port`)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sign_in(daemon: Daemon) -> dict[str, str]:
    """`coord open --no-browser`'s link, redeemed: the headers the page then sends."""
    link = json.loads(
        run_cli(
            "open", "--as", "alice", "--no-browser", "--json", board_dir=daemon.board_dir
        ).stdout
    )["url"]
    url = urllib.parse.urlsplit(link)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    conn.request("GET", f"{url.path}?{url.query}")
    answer = conn.getresponse()
    page = answer.read().decode()
    conn.close()
    assert answer.status == 200, page
    # no cookie: only the end of an older coord's (one a browser would send every port)
    assert all("Max-Age=0" in c for c in answer.headers.get_all("set-cookie") or [])
    boot = re.search(r'<script id="boot" type="application/json">(.*?)</script>', page)
    assert boot is not None
    return {SESSION: json.loads(boot.group(1))["session"]}


def unredeemed_code(daemon: Daemon) -> str:
    done = run_cli("open", "--as", "alice", "--no-browser", "--json", board_dir=daemon.board_dir)
    return str(urllib.parse.urlsplit(json.loads(done.stdout)["url"]).query)


def test_a_session_or_code_of_another_daemon_instance_is_refused(tmp_path: Path) -> None:
    daemon = Daemon(init_board_dir(tmp_path / "repo"), port=free_port()).start()
    try:
        session = sign_in(daemon)
        assert daemon.request("GET", "/v1/items", token=None, headers=session)[0] == 200
        code = unredeemed_code(daemon)
        daemon.stop()
        daemon.start()  # the same board, token and port: another instance
        status, answer = daemon.request("GET", "/v1/items", token=None, headers=session)
        assert status == 401, answer
        assert "coord open" in answer["message"]
        conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
        conn.request("GET", f"/?{code}")
        assert conn.getresponse().status == 401
        conn.close()
        fresh = sign_in(daemon)  # `coord open` again: in
        assert daemon.request("GET", "/v1/items", token=None, headers=fresh)[0] == 200
    finally:
        daemon.stop()


def test_what_a_squatter_on_the_old_port_collects_opens_nothing(
    tmp_path: Path, other_user: OtherUser
) -> None:
    """The page's reconnect replayed (app.js, prove()) against another user's server on the
    stopped daemon's port; then all it collected, and the whole session besides, brought to
    the board's next daemon on that port."""
    daemon = Daemon(init_board_dir(tmp_path / "repo"), port=free_port()).start()
    try:
        session = sign_in(daemon)[SESSION]
        daemon.stop()
        squatter, seen = other_user.squat(daemon.port)
        payload, _, signature = session.partition(".")
        nonce = os.urandom(16).hex()
        conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
        conn.request(
            "GET",
            f"/v1/web/proof?session={payload}&nonce={nonce}",
            headers={"accept": "application/json"},
        )
        forged = json.loads(conn.getresponse().read())["proof"]
        conn.close()
        # the stranger cannot answer as the page's daemon would
        key = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
        wanted = hmac.new(key, f"coord page identity v1\n{nonce}".encode(), "sha256")
        assert forged != wanted.hexdigest()
        collected = json.dumps(requests_seen(seen))
        assert payload in collected  # what it got: the session's open part
        assert signature not in collected and daemon.token not in collected
        squatter.kill()
        squatter.wait(10)
        daemon.start()  # the board's next daemon, on the same port
        for value in (payload, session, f"{payload}.{forged}"):
            status, _ = daemon.request("GET", "/v1/items", token=None, headers={SESSION: value})
            assert status == 401, value
            status, _ = daemon.request(
                "GET", "/v1/items", token=None, headers={"cookie": f"coord_{daemon.port}={value}"}
            )
            assert status == 401, value
    finally:
        daemon.stop()
