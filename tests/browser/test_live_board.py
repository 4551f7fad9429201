"""The live board in a real browser: opened with `coord open`'s one-time link, kept live from
the event stream, answering as its person, and refusing what does not come from it."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from tests.conftest import Daemon

from .conftest import Browser, card, cli, open_page

AGENT = "agent-1"


def snapshot(daemon: Daemon) -> Any:
    items = daemon.request("GET", "/v1/items?state=open")
    events = daemon.request("GET", "/v1/events?limit=5000")
    return items, events


def test_the_page_follows_the_board_without_a_reload(served: Daemon, browser: Browser) -> None:
    landed = open_page(served, browser)
    assert landed.endswith("/") and "code" not in landed  # the code left the address bar
    assert browser.eval("document.querySelector('header .who b').textContent") == "alice"

    title = '<img src=x onerror="window.pwned=1">Fix & ship \u0007 it'
    item = cli(served, "add", title, agent="planner")["id"]
    browser.wait(card("ready", item))
    shown = browser.eval(f"{card('ready', item)}.querySelector('.title').textContent")
    assert title in shown  # as text: no markup made of it
    assert browser.eval(f"{card('ready', item)}.querySelector('img')") is None
    assert browser.eval("window.pwned === undefined")
    assert browser.eval(f"{card('ready', item)}.classList.contains('claimable')")

    cli(served, "claim", str(item), "--lease", "4", agent=AGENT)
    browser.wait(card("claimed", item))
    assert browser.eval(f"{card('ready', item)} === null")
    countdown = browser.eval(f"{card('claimed', item)}.querySelector('.countdown').textContent")
    assert re.fullmatch(r"[1-4]s left", countdown), countdown
    holder = browser.eval(f"{card('claimed', item)}.querySelector('b').textContent")
    assert holder == AGENT

    # no event says a lease ran out: the page's clock (the board's, sent with the page) does
    lapsed = f"{card('ready', item)} && {card('ready', item)}.classList.contains('lapsed')"
    browser.wait(lapsed, timeout=15)
    assert "claimable again" in browser.eval(f"{card('ready', item)}.textContent")
    assert browser.eval(f"{card('claimed', item)} === null")
    assert browser.do("loads") == 1  # all of it without a reload
    assert browser.do("problems") == []


def test_an_answer_from_the_page_reaches_the_holder(served: Daemon, browser: Browser) -> None:
    item = cli(served, "add", "choose a database", agent="planner")["id"]
    cli(served, "claim", str(item), agent=AGENT)
    cli(served, "escalate", str(item), "Postgres or SQLite?", agent=AGENT)
    open_page(served, browser)
    browser.wait(card("needs", item))
    question = browser.eval(f"{card('needs', item)}.querySelector('.question').textContent")
    assert question == "Postgres or SQLite?"

    browser.do("fill", selector=f'#col-needs .card[data-id="{item}"] textarea', text="SQLite")
    browser.do("click", selector=f'#col-needs .card[data-id="{item}"] button')
    browser.wait(card("claimed", item))
    assert browser.eval(f"{card('needs', item)} === null")

    inbox = cli(served, "inbox", agent=AGENT)["events"]
    answers = [e for e in inbox if e["kind"] == "answered"]
    assert [(e["agent"], e["details"]["answer"]) for e in answers] == [("alice", "SQLite")]


def test_what_does_not_come_from_the_page_changes_nothing(served: Daemon, browser: Browser) -> None:
    item = cli(served, "add", "a question", agent="planner")["id"]
    cli(served, "claim", str(item), agent=AGENT)
    cli(served, "escalate", str(item), "yes?", agent=AGENT)
    open_page(served, browser)
    before = snapshot(served)

    def post_from_page(headers: dict[str, str]) -> Any:
        return browser.eval(
            f"""fetch('/v1/items/{item}/answer', {{
                method: 'POST', credentials: 'same-origin',
                headers: {json.dumps({"content-type": "application/json", **headers})},
                body: JSON.stringify({{agent: 'alice', text: 'forged'}}),
            }}).then(async (r) => [r.status, (await r.json()).error])"""
        )

    # the page's own fetch without its session, or with a forged one: no cookie lets it in
    assert post_from_page({}) == [401, "unauthorized"]
    assert post_from_page({"x-coord-session": "e30.forged"}) == [401, "unauthorized"]
    # without the cookie: the board's API refuses (the daemon's own client, no token)
    status, answer = served.request(
        "POST", f"/v1/items/{item}/answer", {"agent": "alice", "text": "x"}, token=None
    )
    assert (status, answer["error"]) == (401, "unauthorized")

    # another origin (localhost is not 127.0.0.1 to a browser): a form-like POST it may send
    port = served.url.rsplit(":", 1)[1]
    browser.do("goto", url=f"http://localhost:{port}/web/app.css")
    sent = browser.eval(
        f"""fetch('http://127.0.0.1:{port}/v1/items/{item}/answer', {{
            method: 'POST', mode: 'no-cors', credentials: 'include',
            headers: {{'content-type': 'text/plain'}},
            body: JSON.stringify({{agent: 'alice', text: 'forged'}}),
        }}).then(() => 'sent', () => 'failed')"""
    )
    assert sent in ("sent", "failed")
    assert snapshot(served) == before


def test_the_page_keeps_up_across_a_cut_connection(served: Daemon, browser: Browser) -> None:
    first = cli(served, "add", "before the cut", agent="planner")["id"]
    open_page(served, browser)
    browser.wait(card("ready", first))
    browser.do("sent")
    browser.do("offline", on=True)
    # the open stream outlives the switch; the read the next event asks for does not, and
    # the page drops the stream with it
    while_cut = [cli(served, "add", "while cut 0", agent="planner")["id"]]
    browser.wait("document.getElementById('link').dataset.state !== 'live'")
    # written while the page cannot reach the daemon: it must get these from the log
    while_cut += [cli(served, "add", f"while cut {n}", agent="planner")["id"] for n in (1, 2)]
    browser.do("offline", on=False)
    browser.wait("document.getElementById('link').dataset.state === 'live'", timeout=20)
    after = cli(served, "add", "after the cut", agent="planner")["id"]
    cli(served, "claim", str(after), agent=AGENT)

    last = served.request("GET", "/v1/events?limit=5000")[1]["events"][-1]["seq"]
    browser.wait(f"document.body.dataset.lastSeq === '{last}'", timeout=20)
    for item in (first, *while_cut):
        browser.wait(card("ready", item))
    browser.wait(card("claimed", after))
    seqs = browser.eval(
        "[...document.querySelectorAll('#feed li[data-seq]')].map(li => +li.dataset.seq)"
    )
    assert sorted(seqs) == list(range(1, last + 1))  # every event once: none missed, none doubled
    assert browser.do("loads") == 1
    # from the cut on, the page asked for proof until the daemon answered, and sent its
    # session again only after that
    sent = [r for r in browser.do("sent") if "/v1/" in r["url"]]
    proofs = [i for i, r in enumerate(sent) if "/v1/web/proof?" in r["url"]]
    assert proofs, sent
    assert all("x-coord-session" not in r["headers"] for r in sent[proofs[0] : proofs[-1] + 1])
    assert any("x-coord-session" in r["headers"] for r in sent[proofs[-1] :])
    assert all("cookie" not in r["headers"] for r in sent)


def test_a_restarted_daemon_asks_for_coord_open(served: Daemon, browser: Browser) -> None:
    first = cli(served, "add", "before the restart", agent="planner")["id"]
    open_page(served, browser)
    browser.wait(card("ready", first))
    served.stop()
    served.start()  # the same board, port and token: another daemon process all the same
    browser.wait("document.getElementById('link').textContent.includes('coord open')", timeout=20)
    assert browser.eval("document.getElementById('link').dataset.state") == "lost"
    assert "restarted" in browser.eval("document.getElementById('link').textContent")
    note = "document.getElementById('signed-out')"
    assert browser.eval(f"!{note}.hidden && {note}.textContent.includes('restarted')")
    # what it sent the new daemon once the proof failed: nothing
    sent = [r for r in browser.do("sent") if "/v1/" in r["url"]]
    proof = max(i for i, r in enumerate(sent) if "/v1/web/proof?" in r["url"])
    assert all("x-coord-session" not in r["headers"] for r in sent[proof:]), sent[proof:]
    # a reload does not bring the old session back
    browser.do("goto", url=served.url + "/")
    assert not browser.eval("document.getElementById('signed-out').hidden")
    # `coord open` again: in, as before
    second = cli(served, "add", "after the restart", agent="planner")["id"]
    open_page(served, browser)
    browser.wait(card("ready", first))
    browser.wait(card("ready", second))


def test_a_screenshot_of_a_seeded_board(served: Daemon, browser: Browser, artifacts: Path) -> None:
    seed(served)
    open_page(served, browser)
    # the first document seen is shown: its packages, each by where it stands now
    browser.wait("document.querySelectorAll('#plan svg g').length === 7")
    plan = browser.eval(
        "Object.fromEntries([...document.querySelectorAll('#plan svg g')].map(g => "
        "[g.querySelector('title').textContent.split(':')[0], g.getAttribute('class')]))"
    )
    assert plan == {
        "P1": "done",
        "P2": "claimed",
        "P3": "claimed",
        "P4": "waiting",
        "P5": "waiting",
        "P6": "waiting",
        "P7": "claimable",
    }
    browser.wait("document.querySelectorAll('#files .hold').length >= 2")
    clients = browser.eval(
        "[...document.querySelectorAll('#col-claimed .meta .tag')].map(t => t.textContent)"
    )
    assert sorted(clients) == ["claude", "codex"]  # told by the agents' names
    time.sleep(1.2)  # one tick of the countdowns
    shot = artifacts / "live-board.png"
    browser.do("screenshot", path=str(shot))
    assert shot.stat().st_size > 10_000
    print(f"\nscreenshot of the seeded board: {shot}")
    if os.environ.get("COORD_REFRESH_SCREENSHOT") == "1":  # the README's picture, on purpose
        shutil.copyfile(shot, Path(__file__).parents[2] / "docs" / "live-board.png")


def seed(daemon: Daemon) -> None:
    """A board with something in every column and panel."""

    def post(path: str, body: dict[str, Any]) -> Any:
        status, answer = daemon.request("POST", path, body)
        assert status < 300, answer
        return answer

    packages = [
        {"id": "P1", "title": "schema and migrations", "line": 10, "done": True},
        {"id": "P2", "title": "claim API", "line": 20, "dependencies": ["P1"]},
        {"id": "P3", "title": "event stream", "line": 30, "dependencies": ["P1"]},
        {"id": "P4", "title": "web page", "line": 40, "dependencies": ["P3"]},
        {"id": "P5", "title": "terminal view", "line": 50, "dependencies": ["P3"]},
        {"id": "P6", "title": "release notes", "line": 60, "dependencies": ["P4", "P5"]},
        {"id": "P7", "title": "user guide", "line": 70, "dependencies": ["P1"]},
    ]
    post("/v1/spec:import", {"agent": "lead", "spec": "docs/plan.md", "packages": packages})
    post("/v1/items/P3/claim", {"agent": "claude-1", "lease_seconds": 900})
    post(
        "/v1/reservations",
        {"agent": "claude-1", "patterns": ["src/coord/server/stream.py"], "item": "P3"},
    )
    post("/v1/items", {"agent": "lead", "title": "tidy the README's tables", "priority": 3})
    fix = post(
        "/v1/items",
        {"agent": "lead", "title": "fix the flaky lease test", "files": ["tests/test_leases.py"]},
    )["id"]
    post(
        "/v1/reservations",
        {"agent": "codex-2", "patterns": ["tests/test_leases.py"], "lease_seconds": 600},
    )
    post("/v1/items", {"agent": "lead", "title": "bench the storm", "deps": [fix]})
    ask = post("/v1/items", {"agent": "lead", "title": "pick the session length"})["id"]
    token = post(f"/v1/items/{ask}/claim", {"agent": "gemini-3"})["token"]
    post(
        f"/v1/items/{ask}/escalate",
        {"agent": "gemini-3", "token": token, "question": "12 hours, or until the browser closes?"},
    )
    done = post("/v1/items", {"agent": "lead", "title": "vendor nothing", "checks": ["make lint"]})
    token = post(f"/v1/items/{done['id']}/claim", {"agent": "codex-2"})["token"]
    post(
        f"/v1/items/{done['id']}/done",
        {
            "agent": "codex-2",
            "token": token,
            "summary": "no vendored code needed",
            "evidence": [
                {
                    "command": "make lint",
                    "exit_code": 0,
                    "duration_s": 4.2,
                    "output_tail": "Success: no issues found",
                }
            ],
        },
    )
    post("/v1/items/P2/claim", {"agent": "codex-2", "lease_seconds": 120})


def test_a_column_holds_one_page_and_pages_the_rest(served: Daemon, browser: Browser) -> None:
    titles = [{"title": f"item {n}"} for n in range(450)]
    status, answer = served.request(
        "POST", "/v1/items:import", {"agent": "planner", "items": titles}
    )
    assert status == 201, answer
    open_page(served, browser)
    rows = "document.querySelectorAll('#col-ready .card').length"
    first = "+document.querySelector('#col-ready .card').dataset.id"
    assert browser.eval(rows) == 200
    # Ready counts the claimable, of the pending (all 450 are claimable here)
    assert browser.eval("document.querySelector('#col-ready .count').textContent") == "(450 of 450)"
    browser.do("click", selector="#col-ready .pager button:last-child")
    browser.wait(f"{first} === 201")
    assert browser.eval(rows) == 200
    browser.do("click", selector="#col-ready .pager button:last-child")
    browser.wait(f"{first} === 401")
    assert browser.eval(rows) == 50
    assert browser.eval("document.querySelectorAll('.card').length") <= 4 * 200


def test_an_item_unblocks_when_its_dependency_is_done(served: Daemon, browser: Browser) -> None:
    first = cli(served, "add", "first", agent="planner")["id"]
    then = cli(served, "add", "then", "--dep", str(first), agent="planner")["id"]
    open_page(served, browser)
    browser.wait(card("ready", then))
    assert browser.eval(f"{card('ready', then)}.classList.contains('blocked')")
    assert f"waits on #{first}" in browser.eval(f"{card('ready', then)}.textContent")
    cli(served, "claim", str(first), agent=AGENT)
    cli(served, "done", str(first), agent=AGENT)
    # no event names the dependent item: the page reads its Ready page again
    browser.wait(f"{card('ready', then)}.classList.contains('claimable')")
    browser.wait(card("done", first))


def test_countdowns_run_on_the_board_clock_not_the_browser(
    served: Daemon, browser: Browser
) -> None:
    item = cli(served, "add", "timed", agent="planner")["id"]
    cli(served, "claim", str(item), "--lease", "600", agent=AGENT)
    skewed = browser.do("skewClock", ms=-3_600_000)  # the browser's clock an hour slow
    assert abs(skewed / 1000 - time.time() + 3600) < 60
    open_page(served, browser)
    browser.wait(card("claimed", item))
    left = browser.eval(f"{card('claimed', item)}.querySelector('.countdown').textContent")
    # 10 minutes less the seconds since the claim: not 1 h 10 min, as the browser's clock says
    assert re.fullmatch(r"(9m\d\ds|10m00s) left", left), left  # as the CLI spells it


def test_the_feed_filters_by_agent_and_item(served: Daemon, browser: Browser) -> None:
    one = cli(served, "add", "one", agent="planner")["id"]
    two = cli(served, "add", "two", agent="planner")["id"]
    cli(served, "claim", str(two), agent=AGENT)
    open_page(served, browser)
    shown = "[...document.querySelectorAll('#feed li[data-seq]')].map(li => +li.dataset.seq)"
    assert sorted(browser.eval(shown)) == [1, 2, 3]
    browser.do("fill", selector="#feed-agent", text=AGENT)
    assert browser.eval(shown) == [3]
    browser.do("fill", selector="#feed-agent", text="")
    browser.do("fill", selector="#feed-item", text=f"#{one}")
    assert browser.eval(shown) == [1]
    cli(served, "reply", str(one), "noted", agent=AGENT)  # live, and filtered as it comes
    browser.wait(f"{shown}.length === 2")
    assert browser.eval(shown) == [4, 1]


def test_a_burst_of_changes_reaches_the_page(served: Daemon, browser: Browser) -> None:
    open_page(served, browser)
    titles = [{"title": f"burst {n}"} for n in range(60)]
    status, answer = served.request(
        "POST", "/v1/items:import", {"agent": "planner", "items": titles}
    )
    assert status == 201, answer
    browser.wait("document.querySelectorAll('#col-ready .card').length === 60")
    status, answer = served.request("POST", "/v1/claim-next", {"agent": AGENT, "count": 40})
    assert status == 200 and len(answer["items"]) == 40, answer
    browser.wait("document.querySelectorAll('#col-claimed .card').length === 40")
    assert browser.eval("document.querySelectorAll('#col-ready .card').length") == 20
    last = served.request("GET", "/v1/events?limit=5000")[1]["events"][-1]["seq"]
    browser.wait(f"document.body.dataset.lastSeq === '{last}'")
    assert browser.do("loads") == 1


def test_a_new_token_ends_the_session_and_the_page_says_so(
    served: Daemon, browser: Browser
) -> None:
    open_page(served, browser)
    served.stop()
    (served.board_dir / "token").write_text("a-new-token-" + "x" * 32 + "\n")
    served.start()
    browser.wait("document.getElementById('link').textContent.includes('coord open')", timeout=20)
    assert browser.eval("document.getElementById('link').dataset.state") == "lost"


def test_done_shows_the_recent_and_pages_every_done_item(served: Daemon, browser: Browser) -> None:
    ids = []
    for n in range(3):
        item = cli(served, "add", f"finished {n}", agent="planner")["id"]
        cli(served, "claim", str(item), agent=AGENT)
        cli(served, "done", str(item), agent=AGENT)
        ids.append(item)
    open_page(served, browser)
    shown = "[...document.querySelectorAll('#col-done .card')].map(c => +c.dataset.id)"
    assert browser.eval(shown) == ids[::-1]  # the newest first
    browser.do("click", selector="#col-done .pager button")
    browser.wait("document.querySelector('#col-done .pager button').textContent === '« recent'")
    assert sorted(browser.eval(shown)) == ids
    browser.do("click", selector="#col-done .pager button")
    browser.wait(
        "document.querySelector('#col-done .pager button').textContent.startsWith('every')"
    )
    assert browser.eval(shown) == ids[::-1]


def test_the_browser_file_of_coord_open_signs_the_page_in(served: Daemon, browser: Browser) -> None:
    """What `coord open` gives a browser: the file:// address of a page that sends it on."""
    status, answer = served.request("POST", "/v1/web/codes", {"agent": "alice", "file": True})
    assert status == 201, answer
    handoff = Path(answer["file"])
    browser.do("goto", url=handoff.as_uri())
    browser.wait("location.href.startsWith('http') && document.body.dataset.ready === '1'")
    browser.wait("document.getElementById('link').dataset.state === 'live'")
    assert browser.eval("location.href") == served.url + "/"  # the code left the address bar
    assert browser.eval("document.querySelector('header .who b').textContent") == "alice"
    deadline = time.monotonic() + 5
    while handoff.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not handoff.exists()  # spent: gone
    browser.do("goto", url=served.url + "/")  # a reload goes on, from the tab's session
    browser.wait("document.getElementById('link').dataset.state === 'live'")
