"""The web page's access: one-time code → session cookie, CSRF token, Origin check.

In-process (Starlette's test client on a real board file), with the WebAccess clock moved by
hand; one acceptance test runs the real `coord open` against a real daemon.
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from tests.conftest import Clock, Daemon, init_board_dir, run_cli

from coord.core.board import Board
from coord.server.app import create_app
from coord.server.web.access import CODE_SECONDS, SESSION_SECONDS, WebAccess

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOST = "127.0.0.1:8123"
ORIGIN = f"http://{HOST}"
COOKIE = "coord_8123"


@pytest.fixture
def web_clock() -> Clock:
    return Clock()


@pytest.fixture
def api(board: Board, web_clock: Clock) -> Iterator[TestClient]:
    app = create_app(board, TOKEN)
    app.state.coord.web = WebAccess(TOKEN, clock=web_clock)
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as client:
        yield client


def issue(api: TestClient, name: str = "alice") -> str:
    answer = api.post("/v1/web/codes", json={"agent": name}, headers=AUTH)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["code"])


def sign_in(api: TestClient, name: str = "alice") -> tuple[str, str]:
    """(the session cookie's value, the page's CSRF token)."""
    opened = api.get(f"/?code={issue(api, name)}")
    assert opened.status_code == 303
    value = _cookie(opened.headers["set-cookie"])
    api.cookies.clear()
    page = api.get("/", headers={"cookie": f"{COOKIE}={value}"})
    assert page.status_code == 200
    boot = re.search(r'<script id="boot" type="application/json">(.*?)</script>', page.text)
    assert boot is not None
    return value, json.loads(boot.group(1))["csrf"]


def _cookie(header: str) -> str:
    name, _, rest = header.partition("=")
    assert name == COOKIE
    return rest.split(";")[0]


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


def test_a_code_opens_the_page_once_with_a_strict_httponly_cookie(api: TestClient) -> None:
    code = issue(api)
    opened = api.get(f"/?code={code}")
    assert opened.status_code == 303
    assert opened.headers["location"] == "/"  # the code leaves the address bar
    flags = [part.strip().lower() for part in opened.headers["set-cookie"].split(";")]
    assert {"httponly", "samesite=strict", "path=/"} <= set(flags)
    api.cookies.clear()
    again = api.get(f"/?code={code}")
    assert again.status_code == 401
    assert "set-cookie" not in again.headers
    assert "coord open" in again.text


def test_a_code_expires(api: TestClient, web_clock: Clock) -> None:
    code = issue(api)
    web_clock.advance(CODE_SECONDS + 1)
    late = api.get(f"/?code={code}")
    assert late.status_code == 401 and "expired" in late.text
    assert "set-cookie" not in late.headers


def test_a_wrong_code_opens_nothing(api: TestClient) -> None:
    issue(api)
    wrong = api.get("/?code=not-a-code")
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers


def test_the_page_without_a_session_says_to_run_coord_open(api: TestClient) -> None:
    page = api.get("/")
    assert page.status_code == 401
    assert "coord open" in page.text and "text/html" in page.headers["content-type"]
    assert api.get("/v1/items").status_code == 401  # the API without cookie or token


def test_a_session_reads_the_board_and_answers_as_its_person(api: TestClient) -> None:
    value, csrf = sign_in(api, "alice")
    item_id = waiting_item(api)
    cookie = {"cookie": f"{COOKIE}={value}"}
    assert api.get("/v1/items", headers=cookie).status_code == 200
    answered = api.post(
        f"/v1/items/{item_id}/answer",
        json={"agent": "alice", "text": "left"},
        headers={**cookie, "origin": ORIGIN, "x-coord-csrf": csrf},
    )
    assert answered.status_code == 200, answered.text
    assert answered.json()["state"] == "claimed"
    inbox = api.post("/v1/inbox", json={"agent": "agent-1"}, headers=AUTH).json()
    assert any(e["kind"] == "answered" and e["agent"] == "alice" for e in inbox["events"])


@pytest.mark.parametrize(
    ("headers", "status", "error"),
    [
        ({"origin": ORIGIN, "x-coord-csrf": "wrong"}, 403, "wrong_csrf"),
        ({"origin": ORIGIN}, 403, "wrong_csrf"),
        ({"x-coord-csrf": "CSRF"}, 403, "foreign_origin"),  # no Origin on a change
        ({"origin": "http://evil.example", "x-coord-csrf": "CSRF"}, 403, "foreign_origin"),
        ({"origin": "http://127.0.0.1:9999", "x-coord-csrf": "CSRF"}, 403, "foreign_origin"),
        ({"origin": ORIGIN, "x-coord-csrf": "CSRF", "cookie": ""}, 401, "unauthorized"),
    ],
)
def test_a_change_without_the_page_own_credentials_changes_nothing(
    api: TestClient, headers: dict[str, str], status: int, error: str
) -> None:
    value, csrf = sign_in(api)
    item_id = waiting_item(api)
    sent = {"cookie": f"{COOKIE}={value}", **headers}
    if sent.get("x-coord-csrf") == "CSRF":
        sent["x-coord-csrf"] = csrf
    before = snapshot(api)
    refused = api.post(
        f"/v1/items/{item_id}/answer", json={"agent": "alice", "text": "x"}, headers=sent
    )
    assert (refused.status_code, refused.json()["error"]) == (status, error)
    assert snapshot(api) == before


def test_a_read_from_a_foreign_origin_is_refused(api: TestClient) -> None:
    value, _ = sign_in(api)
    read = api.get(
        "/v1/items", headers={"cookie": f"{COOKIE}={value}", "origin": "http://evil.example"}
    )
    assert (read.status_code, read.json()["error"]) == (403, "foreign_origin")


def test_the_page_acts_as_its_person_only(api: TestClient) -> None:
    value, csrf = sign_in(api, "alice")
    item_id = waiting_item(api)
    before = snapshot(api)
    as_bob = api.post(
        f"/v1/items/{item_id}/answer",
        json={"agent": "bob", "text": "x"},
        headers={"cookie": f"{COOKIE}={value}", "origin": ORIGIN, "x-coord-csrf": csrf},
    )
    assert (as_bob.status_code, as_bob.json()["error"]) == (403, "not_permitted")
    assert "acts as alice" in as_bob.json()["message"]
    assert snapshot(api) == before


@pytest.mark.parametrize("path", ["/v1/web/codes", "/v1/shutdown"])
def test_the_session_cannot_mint_codes_nor_stop_the_daemon(api: TestClient, path: str) -> None:
    value, csrf = sign_in(api)
    body = {"agent": "alice"} if path.endswith("codes") else {}
    refused = api.post(
        path,
        json=body,
        headers={"cookie": f"{COOKIE}={value}", "origin": ORIGIN, "x-coord-csrf": csrf},
    )
    assert (refused.status_code, refused.json()["error"]) == (403, "not_permitted")


def test_a_forged_or_foreign_cookie_is_refused(api: TestClient, board: Board) -> None:
    value, _ = sign_in(api)
    payload, _, signature = value.partition(".")
    forged = f"{payload[:-2]}xx.{signature}"
    read = api.get("/v1/items", headers={"cookie": f"{COOKIE}={forged}"})
    assert read.status_code == 401
    other = WebAccess("another-board's-token")
    _, foreign = other.new_session("alice")
    assert api.get("/v1/items", headers={"cookie": f"{COOKIE}={foreign}"}).status_code == 401
    assert api.get("/", headers={"cookie": f"{COOKIE}={foreign}"}).status_code == 401


def test_a_session_ends(api: TestClient, web_clock: Clock) -> None:
    value, _ = sign_in(api)
    web_clock.advance(SESSION_SECONDS + 1)
    ended = api.get("/v1/items", headers={"cookie": f"{COOKIE}={value}"})
    assert ended.status_code == 401 and "coord open" in ended.json()["message"]


def test_a_session_outlives_a_restart_of_the_daemon(
    board: Board, api: TestClient, web_clock: Clock
) -> None:
    value, csrf = sign_in(api)
    # a new app with the same token, its access state fresh: what a restarted daemon is
    app = create_app(board, TOKEN)
    app.state.coord.web = WebAccess(TOKEN, clock=web_clock)
    with TestClient(app, base_url=ORIGIN) as restarted:
        assert (
            restarted.get("/v1/items", headers={"cookie": f"{COOKIE}={value}"}).status_code == 200
        )
        page = restarted.get("/", headers={"cookie": f"{COOKIE}={value}"})
        assert page.status_code == 200 and csrf in page.text


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
    assert foreign.status_code == 403 and "set-cookie" not in foreign.headers
    assert api.get("/web/app.js", headers={"host": "evil.example"}).status_code == 403


def test_the_page_and_its_files_allow_only_this_daemon(api: TestClient) -> None:
    value, _ = sign_in(api)
    page = api.get("/", headers={"cookie": f"{COOKIE}={value}"})
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert "http" not in policy.replace("'self'", "")  # no other origin named
    for name in ("app.js", "app.css"):
        served = api.get(f"/web/{name}")
        assert served.status_code == 200 and served.content
    assert api.get("/web/nothing.js").status_code == 404
    script = api.get("/web/app.js").text
    assert ".innerHTML" not in script and "insertAdjacentHTML" not in script  # text only


def test_coord_open_prints_a_link_that_works_once(daemon: Daemon) -> None:
    done = run_cli("open", "--as", "alice", "--no-browser", "--json", board_dir=daemon.board_dir)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["as"] == "alice" and answer["opened"] is False
    url = urllib.parse.urlsplit(answer["url"])
    assert f"{url.scheme}://{url.netloc}" == daemon.url

    def get(path: str) -> tuple[int, str | None]:
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            return response.status, response.getheader("set-cookie")
        finally:
            conn.close()

    status, cookie = get(f"{url.path}?{url.query}")
    assert status == 303 and "HttpOnly" in (cookie or "")
    assert get(f"{url.path}?{url.query}") == (401, None)


def test_coord_open_refuses_a_bad_name(daemon: Daemon) -> None:
    done = run_cli("open", "--as", "<script>", "--no-browser", board_dir=daemon.board_dir)
    assert done.returncode == 2 and "invalid agent name" in done.stderr


def test_the_hot_path_takes_the_session_with_the_same_checks(api: TestClient) -> None:
    """claim-next is served outside Starlette's routing, through the same pipeline."""
    value, csrf = sign_in(api, "alice")
    api.post("/v1/items", json={"agent": "lead", "title": "t"}, headers=AUTH)
    cookie = {"cookie": f"{COOKIE}={value}", "origin": ORIGIN}
    before = snapshot(api)
    refused = api.post("/v1/claim-next", json={"agent": "alice"}, headers=cookie)
    assert (refused.status_code, refused.json()["error"]) == (403, "wrong_csrf")
    assert snapshot(api) == before
    claimed = api.post(
        "/v1/claim-next", json={"agent": "alice"}, headers={**cookie, "x-coord-csrf": csrf}
    )
    assert claimed.status_code == 200 and claimed.json()["agent"] == "alice"


def test_the_stream_refuses_a_foreign_origin(api: TestClient) -> None:
    value, _ = sign_in(api)
    refused = api.get(
        "/v1/events/stream",
        headers={"cookie": f"{COOKIE}={value}", "origin": "http://evil.example"},
    )
    assert (refused.status_code, refused.json()["error"]) == (403, "foreign_origin")


@pytest.mark.parametrize(("query", "headers"), [("?agent=bob", {}), ("", {"x-coord-agent": "bob"})])
def test_a_bare_import_cannot_name_another_agent(
    api: TestClient, query: str, headers: dict[str, str]
) -> None:
    value, csrf = sign_in(api, "alice")
    before = snapshot(api)
    refused = api.post(
        f"/v1/items:import{query}",
        json=[{"title": "as bob"}],
        headers={
            "cookie": f"{COOKIE}={value}",
            "origin": ORIGIN,
            "x-coord-csrf": csrf,
            **headers,
        },
    )
    assert (refused.status_code, refused.json()["error"]) == (403, "not_permitted")
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
