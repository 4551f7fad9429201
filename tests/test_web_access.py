"""The web page's access: one-time code -> a session this daemon process alone accepts, sent
in a header (never a cookie), the daemon's proof to the page, the browser's hand-off file.

In-process (Starlette's test client on a real board file), with the WebAccess clock moved by
hand; acceptance tests run the real `coord open` against a real daemon (and, as another
user, tests/acceptance/test_other_user.py).
"""

from __future__ import annotations

import hmac
import http.client
import json
import os
import re
import shutil
import stat
import subprocess
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from tests.conftest import Clock, Daemon, init_board_dir, run_cli

from coord.core.board import Board
from coord.server.app import create_app
from coord.server.web.access import (
    CODE_SECONDS,
    PROOF_DOMAIN,
    SESSION_HEADER,
    SESSION_SECONDS,
    WebAccess,
    _unb64,
)

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOST = "127.0.0.1:8123"
ORIGIN = f"http://{HOST}"
STATIC = Path(__file__).parents[1] / "src" / "coord" / "server" / "web" / "static"
STATIC_FILES = sorted(path.name for path in STATIC.iterdir() if path.is_file())


@pytest.fixture
def web_clock() -> Clock:
    return Clock()


class Later:
    """What the WebAccess asked to run later (its code sweeps), run when the test says."""

    def __init__(self) -> None:
        self.waiting: list[tuple[float, Callable[[], None]]] = []

    def __call__(self, seconds: float, then: Callable[[], None]) -> None:
        self.waiting.append((seconds, then))

    def run(self) -> None:
        for _, then in self.waiting:
            then()
        self.waiting.clear()


@pytest.fixture
def later() -> Later:
    return Later()


@pytest.fixture
def handoff_dir(board_dir: Path) -> Path:
    return board_dir / "open"


@pytest.fixture
def api(board: Board, web_clock: Clock, later: Later, handoff_dir: Path) -> Iterator[TestClient]:
    app = create_app(board, TOKEN)
    app.state.coord.web = WebAccess(clock=web_clock, handoff_dir=handoff_dir, later=later)
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as client:
        yield client


def issue(api: TestClient, name: str = "alice", **body: Any) -> str:
    answer = api.post("/v1/web/codes", json={"agent": name, **body}, headers=AUTH)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["code"])


def boot_of(page: str) -> dict[str, Any]:
    boot = re.search(r'<script id="boot" type="application/json">(.*?)</script>', page)
    assert boot is not None
    return dict(json.loads(boot.group(1)))


def sign_in(api: TestClient, name: str = "alice") -> str:
    """The page's session value, as the page gets it from its link."""
    opened = api.get(f"/?code={issue(api, name)}")
    assert opened.status_code == 200, opened.text
    return str(boot_of(opened.text)["session"])


def waiting_item(api: TestClient) -> int:
    """An item claimed by agent-1 that asks a human a question."""
    item = api.post("/v1/items", json={"agent": "agent-1", "title": "t"}, headers=AUTH).json()
    claim = api.post(f"/v1/items/{item['id']}/claim", json={"agent": "agent-1"}, headers=AUTH)
    token = claim.json()["token"]
    asked = api.post(
        f"/v1/items/{item['id']}/escalate",
        json={"agent": "agent-1", "token": token, "question": "which way?"},
        headers=AUTH,
    )
    assert asked.status_code == 200, asked.text
    return int(item["id"])


def snapshot(api: TestClient) -> Any:
    return (
        api.get("/v1/items?state=open", headers=AUTH).json(),
        api.get("/v1/events", headers=AUTH).json(),
    )


def test_a_code_opens_the_page_once_and_sets_no_cookie(api: TestClient) -> None:
    code = issue(api)
    opened = api.get(f"/?code={code}")
    assert opened.status_code == 200
    value = boot_of(opened.text)["session"]
    assert api.get("/v1/items", headers={SESSION_HEADER: value}).status_code == 200
    # a cookie would go to every port of 127.0.0.1: the only one is an older coord's, ended
    cookies = opened.headers.get_list("set-cookie")
    assert cookies == ["coord_8123=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"]
    again = api.get(f"/?code={code}")
    assert again.status_code == 401
    assert "set-cookie" not in again.headers
    assert "coord open" in again.text


def test_a_code_expires(api: TestClient, web_clock: Clock) -> None:
    code = issue(api)
    web_clock.advance(CODE_SECONDS + 1)
    late = api.get(f"/?code={code}")
    assert late.status_code == 401 and "expired" in late.text
    assert "session" not in late.text


def test_a_wrong_code_opens_nothing(api: TestClient) -> None:
    issue(api)
    wrong = api.get("/?code=not-a-code")
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers


def test_the_page_without_a_session_says_to_run_coord_open(api: TestClient) -> None:
    page = api.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "coord open" in page.text
    assert "session" not in boot_of(page.text)  # nothing of the board without a code
    assert api.get("/v1/items").status_code == 401  # the API without session or token


def test_a_session_reads_the_board_and_answers_as_its_person(api: TestClient) -> None:
    value = sign_in(api, "alice")
    item_id = waiting_item(api)
    session = {SESSION_HEADER: value}
    assert api.get("/v1/items", headers=session).status_code == 200
    about = api.get("/v1/web/session", headers=session)
    assert about.status_code == 200 and about.json()["as"] == "alice"
    answered = api.post(
        f"/v1/items/{item_id}/answer",
        json={"agent": "alice", "text": "left"},
        headers={**session, "origin": ORIGIN},
    )
    assert answered.status_code == 200, answered.text
    assert answered.json()["state"] == "claimed"
    inbox = api.post("/v1/inbox", json={"agent": "agent-1"}, headers=AUTH).json()
    assert any(e["kind"] == "answered" and e["agent"] == "alice" for e in inbox["events"])


@pytest.mark.parametrize(
    ("headers", "status", "error"),
    [
        ({SESSION_HEADER: "SESSION"}, 403, "foreign_origin"),  # no Origin on a change
        ({SESSION_HEADER: "SESSION", "origin": "http://evil.example"}, 403, "foreign_origin"),
        ({SESSION_HEADER: "SESSION", "origin": "http://127.0.0.1:9999"}, 403, "foreign_origin"),
        ({"origin": ORIGIN}, 401, "unauthorized"),
        # the session in a cookie (as an older coord's page had it) opens nothing
        ({"origin": ORIGIN, "cookie": "coord_8123=SESSION"}, 401, "unauthorized"),
        ({"origin": ORIGIN, SESSION_HEADER: "e30.forged"}, 401, "unauthorized"),
    ],
)
def test_a_change_without_the_page_own_credentials_changes_nothing(
    api: TestClient, headers: dict[str, str], status: int, error: str
) -> None:
    value = sign_in(api)
    item_id = waiting_item(api)
    sent = {key: text.replace("SESSION", value) for key, text in headers.items()}
    before = snapshot(api)
    refused = api.post(
        f"/v1/items/{item_id}/answer", json={"agent": "alice", "text": "x"}, headers=sent
    )
    assert (refused.status_code, refused.json()["error"]) == (status, error)
    assert snapshot(api) == before


def test_a_read_from_a_foreign_origin_is_refused(api: TestClient) -> None:
    value = sign_in(api)
    read = api.get("/v1/items", headers={SESSION_HEADER: value, "origin": "http://evil.example"})
    assert (read.status_code, read.json()["error"]) == (403, "foreign_origin")


def test_the_page_acts_as_its_person_only(api: TestClient) -> None:
    value = sign_in(api, "alice")
    item_id = waiting_item(api)
    before = snapshot(api)
    as_bob = api.post(
        f"/v1/items/{item_id}/answer",
        json={"agent": "bob", "text": "x"},
        headers={SESSION_HEADER: value, "origin": ORIGIN},
    )
    # one rule for a page and a person's token (issue 27): acting as another is `forbidden`
    assert (as_bob.status_code, as_bob.json()["error"]) == (403, "forbidden")
    assert "acts as alice" in as_bob.json()["message"]
    assert snapshot(api) == before


@pytest.mark.parametrize("path", ["/v1/web/codes", "/v1/shutdown"])
def test_the_session_cannot_mint_codes_nor_stop_the_daemon(api: TestClient, path: str) -> None:
    value = sign_in(api)
    body = {"agent": "alice"} if path.endswith("codes") else {}
    refused = api.post(path, json=body, headers={SESSION_HEADER: value, "origin": ORIGIN})
    assert (refused.status_code, refused.json()["error"]) == (403, "not_permitted")


def test_a_forged_session_is_refused(api: TestClient) -> None:
    value = sign_in(api)
    payload, _, signature = value.partition(".")
    forged = f"{payload[:-2]}xx.{signature}"
    assert api.get("/v1/items", headers={SESSION_HEADER: forged}).status_code == 401
    assert api.get("/v1/items", headers={SESSION_HEADER: payload}).status_code == 401


def test_a_session_or_code_of_another_daemon_process_is_refused(
    board: Board, api: TestClient, web_clock: Clock
) -> None:
    """The same board and token, another WebAccess: what a restarted daemon is."""
    value = sign_in(api)
    code = issue(api)
    app = create_app(board, TOKEN)
    app.state.coord.web = WebAccess(clock=web_clock)
    with TestClient(app, base_url=ORIGIN) as restarted:
        refused = restarted.get("/v1/items", headers={SESSION_HEADER: value})
        assert refused.status_code == 401
        assert (
            "restarted" in refused.json()["message"] and "coord open" in refused.json()["message"]
        )
        assert restarted.get(f"/?code={code}").status_code == 401
        # nor does the new daemon prove it made the page's session
        payload = value.partition(".")[0]
        nonce = "ab" * 16
        assert restarted.get(f"/v1/web/proof?session={payload}&nonce={nonce}").json()[
            "proof"
        ] != expected_proof(value, nonce)
    assert api.get("/v1/items", headers={SESSION_HEADER: value}).status_code == 200


def test_a_session_ends(api: TestClient, web_clock: Clock) -> None:
    value = sign_in(api)
    web_clock.advance(SESSION_SECONDS + 1)
    ended = api.get("/v1/items", headers={SESSION_HEADER: value})
    assert ended.status_code == 401 and "coord open" in ended.json()["message"]


# --- the daemon's proof to the page ------------------------------------------------------


def expected_proof(value: str, nonce: str) -> str:
    """What the page checks (proof.js), computed here with Python's hmac."""
    signature = _unb64(value.partition(".")[2])
    return hmac.new(signature, f"{PROOF_DOMAIN}\n{nonce}".encode(), "sha256").hexdigest()


def test_the_daemon_proves_it_made_the_session_without_seeing_it(api: TestClient) -> None:
    value = sign_in(api)
    payload = value.partition(".")[0]
    for nonce in ("00" * 16, "5ca1ab1e" * 4):
        answer = api.get(f"/v1/web/proof?session={payload}&nonce={nonce}")  # no credentials
        assert answer.status_code == 200
        assert answer.json() == {"proof": expected_proof(value, nonce)}
    # another session's part answers another proof: the page's check is of its own session
    other = sign_in(api)
    answer = api.get(f"/v1/web/proof?session={other.partition('.')[0]}&nonce={'00' * 16}")
    assert answer.json()["proof"] != expected_proof(value, "00" * 16)


@pytest.mark.parametrize(
    "query",
    ["session=a.b&nonce=" + "00" * 16, "session=abc&nonce=xyz", "nonce=" + "00" * 16, "session=a"],
)
def test_a_bad_proof_request_says_what_to_send(api: TestClient, query: str) -> None:
    answer = api.get(f"/v1/web/proof?{query}")
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == "invalid_input"


def test_the_session_endpoint_names_no_person_on_the_token(api: TestClient) -> None:
    answer = api.get("/v1/web/session", headers=AUTH)
    assert answer.status_code == 200
    assert answer.json()["as"] is None and answer.json()["expires_at"] is None


def test_proof_js_computes_what_python_does(tmp_path: Path) -> None:
    """The page's HMAC-SHA256 (by hand, for plain-http daemons) against Python's, over keys
    and messages of every length around the block size."""
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no Node.js on PATH")
        pytest.skip("no Node.js on PATH")
    cases = [
        (os.urandom(k), os.urandom(m))
        for k in (0, 1, 32, 63, 64, 65, 200)
        for m in (0, 1, 55, 56, 63, 64, 65, 119, 120, 1000)
    ]
    script = (
        f"require({json.dumps(str(STATIC / 'proof.js'))});"
        "const p = globalThis.coordProof; const hexto = (h) => Uint8Array.from("
        "h.match(/../g) || [], (x) => parseInt(x, 16));"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(cases.map(([k, m]) => p.hex(p.hmacSha256(hexto(k), "
        "hexto(m))))));"
    )
    done = subprocess.run(
        [node, "-e", script],
        input=json.dumps([[k.hex(), m.hex()] for k, m in cases]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [hmac.new(k, m, "sha256").hexdigest() for k, m in cases]


# --- the browser's hand-off file ---------------------------------------------------------


def handed_off(api: TestClient) -> tuple[str, Path]:
    answer = api.post("/v1/web/codes", json={"agent": "alice", "file": True}, headers=AUTH)
    assert answer.status_code == 201, answer.text
    return answer.json()["code"], Path(answer.json()["file"])


def test_the_hand_off_file_is_the_owner_alone_and_leads_to_the_link(
    api: TestClient, handoff_dir: Path
) -> None:
    code, file = handed_off(api)
    assert file.parent == handoff_dir
    assert stat.S_IMODE(handoff_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    text = file.read_text()
    link = f"http://{HOST}/?code={code}"
    assert f'content="0;url={link}"' in text and json.dumps(link) in text
    assert api.get(urllib.parse.urlsplit(link).path + "?code=" + code).status_code == 200
    assert not file.exists()  # redeemed: gone


def test_the_hand_off_file_goes_with_its_code(
    api: TestClient, web_clock: Clock, later: Later, handoff_dir: Path
) -> None:
    _, expiring = handed_off(api)
    assert later.waiting and later.waiting[0][0] > CODE_SECONDS
    web_clock.advance(CODE_SECONDS + 1)
    later.run()
    assert not expiring.exists()
    _, closing = handed_off(api)
    api.app.state.coord.web.close()  # type: ignore[attr-defined]
    assert not closing.exists()
    # one a killed daemon left behind goes with the next daemon's next file
    left = handoff_dir / ("ab" * 16 + ".html")
    left.write_text("x")
    os.utime(left, (0, 0))
    _, kept = handed_off(api)
    assert not left.exists() and kept.exists()


def test_no_hand_off_file_without_a_board_directory(board: Board) -> None:
    with TestClient(create_app(board, TOKEN), base_url=ORIGIN) as api:
        answer = api.post("/v1/web/codes", json={"agent": "alice", "file": True}, headers=AUTH)
        assert answer.status_code == 422 and "--no-browser" in answer.json()["message"]


# --- who may open, and from where --------------------------------------------------------


def test_codes_are_for_the_board_humans_when_it_lists_them(tmp_path: Path) -> None:
    board = Board.open(init_board_dir(tmp_path, humans=["carol"]))
    try:
        with TestClient(create_app(board, TOKEN), base_url=ORIGIN) as api:
            refused = api.post("/v1/web/codes", json={"agent": "mallory"}, headers=AUTH)
            assert (refused.status_code, refused.json()["error"]) == (403, "not_permitted")
            assert "carol" in refused.json()["message"]
            assert (
                api.post("/v1/web/codes", json={"agent": "carol"}, headers=AUTH).status_code == 201
            )
    finally:
        board.close()


def test_codes_need_the_token(api: TestClient) -> None:
    assert api.post("/v1/web/codes", json={"agent": "alice"}).status_code == 401


def test_the_page_keeps_the_host_check(api: TestClient) -> None:
    code = issue(api)
    foreign = api.get(f"/?code={code}", headers={"host": "evil.example:8123"})
    assert foreign.status_code == 403 and "session" not in foreign.text
    assert api.get("/web/app.js", headers={"host": "evil.example"}).status_code == 403


def test_the_page_and_its_files_allow_only_this_daemon(api: TestClient) -> None:
    page = api.get("/")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "http" not in policy.replace("'self'", "")  # no other origin named
    for name in STATIC_FILES:
        served = api.get(f"/web/{name}")
        assert served.status_code == 200 and served.content
        assert f'src="/web/{name}"' in page.text or name.endswith(".css")  # each one used
        if name.endswith(".js"):  # text only, in every script the page runs
            assert ".innerHTML" not in served.text and "insertAdjacentHTML" not in served.text
            assert "outerHTML" not in served.text and "document.write" not in served.text
    assert api.get("/web/nothing.js").status_code == 404
    script = api.get("/web/app.js").text
    assert "new EventSource" not in script  # it cannot send the session's header
    # every request of the page's leaves the browser's cookies behind
    assert 'credentials: "same-origin"' not in script and 'credentials: "include"' not in script


def test_coord_open_prints_a_link_that_works_once(daemon: Daemon) -> None:
    done = run_cli("open", "--as", "alice", "--no-browser", "--json", board_dir=daemon.board_dir)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["as"] == "alice" and answer["opened"] is False
    url = urllib.parse.urlsplit(answer["url"])
    assert f"{url.scheme}://{url.netloc}" == daemon.url
    assert not (daemon.board_dir / "open").exists()  # no browser: no file for one

    def get(path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    status, page = get(f"{url.path}?{url.query}")
    assert status == 200 and boot_of(page)["session"]
    assert get(f"{url.path}?{url.query}")[0] == 401


def test_coord_open_refuses_a_bad_name(daemon: Daemon) -> None:
    done = run_cli("open", "--as", "<script>", "--no-browser", board_dir=daemon.board_dir)
    assert done.returncode == 2 and "invalid agent name" in done.stderr


def test_the_hot_path_takes_the_session_with_the_same_checks(api: TestClient) -> None:
    """claim-next is served outside Starlette's routing, through the same pipeline."""
    value = sign_in(api, "alice")
    api.post("/v1/items", json={"agent": "lead", "title": "t"}, headers=AUTH)
    before = snapshot(api)
    refused = api.post("/v1/claim-next", json={"agent": "alice"}, headers={SESSION_HEADER: value})
    assert (refused.status_code, refused.json()["error"]) == (403, "foreign_origin")
    assert snapshot(api) == before
    claimed = api.post(
        "/v1/claim-next", json={"agent": "alice"}, headers={SESSION_HEADER: value, "origin": ORIGIN}
    )
    assert claimed.status_code == 200 and claimed.json()["agent"] == "alice"


def test_the_stream_refuses_a_foreign_origin(api: TestClient) -> None:
    value = sign_in(api)
    refused = api.get(
        "/v1/events/stream", headers={SESSION_HEADER: value, "origin": "http://evil.example"}
    )
    assert (refused.status_code, refused.json()["error"]) == (403, "foreign_origin")


@pytest.mark.parametrize(("query", "headers"), [("?agent=bob", {}), ("", {"x-coord-agent": "bob"})])
def test_a_bare_import_cannot_name_another_agent(
    api: TestClient, query: str, headers: dict[str, str]
) -> None:
    value = sign_in(api, "alice")
    before = snapshot(api)
    refused = api.post(
        f"/v1/items:import{query}",
        json=[{"title": "as bob"}],
        headers={SESSION_HEADER: value, "origin": ORIGIN, **headers},
    )
    assert (refused.status_code, refused.json()["error"]) == (403, "forbidden")
    assert snapshot(api) == before


def test_coord_open_names_the_os_user_by_default(daemon: Daemon) -> None:
    done = run_cli(
        "open",
        "--no-browser",
        "--json",
        board_dir=daemon.board_dir,
        env={"LOGNAME": "dora", "USER": "dora"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["as"] == "dora"
    odd = run_cli(
        "open", "--no-browser", board_dir=daemon.board_dir, env={"LOGNAME": "a b", "USER": "a b"}
    )
    assert odd.returncode == 2 and "pass --as NAME" in odd.stderr
