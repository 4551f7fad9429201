"""A person works the board from the live page (issue 25, item 5): adds an item, edits it,
replies, answers, cancels and reopens, searches; each change is the CLI's (read back with the
real `coord show` and `coord log`), made as that person, under the CLI's rules."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import Daemon, run_cli

from .conftest import Browser, card, cli, open_page

AGENT = "agent-1"


def show(daemon: Daemon, ref: int | str) -> Any:
    return cli(daemon, "show", str(ref))


def log_of(daemon: Daemon, item: int) -> list[tuple[str, str | None]]:
    """(kind, agent) of every event about the item, in order, as `coord log` prints them."""
    events = cli(daemon, "log", "--limit", "1000")["events"]
    return [(e["kind"], e["agent"]) for e in events if e["item_id"] == item]


def set_value(browser: Browser, selector: str, value: str) -> None:
    """A <select>'s choice (fill types into text fields only)."""
    browser.eval(
        f"(() => {{ const s = document.querySelector({json.dumps(selector)}); "
        f"s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()"
    )


def opened(browser: Browser, item: int) -> None:
    browser.wait(
        f"!document.getElementById('detail').hidden && "
        f"document.getElementById('detail').dataset.id === '{item}'"
    )


def visible_cards(browser: Browser, column: str) -> list[int]:
    return list(
        browser.eval(
            f"[...document.querySelectorAll('#col-{column} .card')].map(c => +c.dataset.id)"
        )
    )


def test_a_person_adds_edits_replies_answers_cancels_and_searches(
    served: Daemon, browser: Browser, artifacts: Path
) -> None:
    dependency = cli(served, "add", "pick the database", agent="planner")["id"]
    open_page(served, browser)
    browser.wait(card("ready", dependency))

    # add: every field the CLI's `coord add` takes, --to included
    browser.do("click", selector="#new-item")
    browser.do("fill", selector="#compose input[name=title]", text="write the user guide")
    browser.do("fill", selector="#compose input[name=labels]", text="docs, ui")
    browser.do("fill", selector="#compose input[name=deps]", text=f"#{dependency}")
    browser.do("fill", selector="#compose input[name=to]", text="codex-1")
    browser.do("fill", selector="#compose textarea[name=body]", text="for newcomers")
    set_value(browser, "#compose select[name=priority]", "1")
    set_value(browser, "#compose select[name=kind]", "handoff")
    browser.do("click", selector="#compose button[type=submit]")
    added = browser.wait("document.querySelector('#compose .ok').textContent")
    item = int(re.fullmatch(r"added #(\d+)", added)[1])  # type: ignore[index]
    shown = show(served, item)
    assert (shown["title"], shown["labels"], shown["deps"], shown["to"]) == (
        "write the user guide",
        ["docs", "ui"],
        [dependency],
        "codex-1",
    )
    assert (shown["priority"], shown["kind"], shown["body"]) == (1, "handoff", "for newcomers")
    assert shown["created_by"] == "alice"
    assert log_of(served, item) == [("created", "alice")]
    browser.wait(card("ready", item))
    assert browser.eval(f"{card('ready', item)}.classList.contains('blocked')")
    # Ready counts what is claimable: the dependency is, the new item waits on it
    browser.wait("document.querySelector('#col-ready .count').textContent === '(1 of 2)'")

    # edit: title, details, priority, labels, and a dependency taken away
    browser.do("click", selector=f'#col-ready .card[data-id="{item}"] .open')
    opened(browser, item)
    browser.do(
        "fill", selector="#detail .edit input[name=title]", text="write the newcomer's guide"
    )
    browser.do("fill", selector="#detail .edit input[name=labels]", text="docs")
    browser.do("fill", selector="#detail .edit input[name=deps]", text="")
    browser.do("fill", selector="#detail .edit textarea[name=body]", text="for the first day")
    set_value(browser, "#detail .edit select[name=priority]", "0")
    browser.do("click", selector="#detail .edit button")
    browser.wait(
        "document.querySelector('#detail .head .title').textContent"
        ' === "write the newcomer\'s guide"'
    )
    shown = show(served, item)
    assert (shown["title"], shown["labels"], shown["deps"]) == (
        "write the newcomer's guide",
        ["docs"],
        [],
    )
    assert (shown["priority"], shown["body"]) == (0, "for the first day")
    edits = log_of(served, item)[1:]
    assert edits and all(agent == "alice" for _, agent in edits), edits
    browser.wait(f"{card('ready', item)}.classList.contains('claimable')")

    # reply, on the item's thread
    browser.do("fill", selector="#detail textarea[name=reply]", text="@codex-1 see the outline")
    browser.do("click", selector="#detail .reply-form button")
    browser.wait("document.querySelectorAll('#detail .replies li').length === 1")
    replies = show(served, item)["replies"]
    assert [(r["author"], r["body"]) for r in replies] == [("alice", "@codex-1 see the outline")]
    assert log_of(served, item)[-1] == ("reply", "alice")
    browser.do("screenshot", path=str(artifacts / "item-opened.png"))

    # answer a question an agent asked, from the item opened
    cli(served, "claim", str(dependency), agent=AGENT)
    cli(served, "escalate", str(dependency), "Postgres or SQLite?", agent=AGENT)
    browser.wait(card("needs", dependency))
    browser.do("click", selector=f'#col-needs .card[data-id="{dependency}"] .open')
    opened(browser, dependency)
    browser.do("fill", selector="#detail textarea[name=answer]", text="SQLite")
    browser.do("click", selector="#detail .answer-form button")
    browser.wait(card("claimed", dependency))
    assert show(served, dependency)["state"] == "claimed"
    inbox = cli(served, "inbox", agent=AGENT)["events"]
    answers = [(e["agent"], e["details"]["answer"]) for e in inbox if e["kind"] == "answered"]
    assert answers == [("alice", "SQLite")]

    # search: the words of a card, its id, a label, a person
    browser.do("fill", selector="#search", text="newcomer")
    browser.wait(
        f"document.querySelectorAll('#col-ready .card').length === 1 && {card('ready', item)}"
    )
    assert visible_cards(browser, "claimed") == []
    browser.do("fill", selector="#search", text=AGENT)
    browser.wait(f"{card('claimed', dependency)} && {card('ready', item)} === null")
    browser.do("fill", selector="#search", text="docs")
    browser.wait(f"{card('ready', item)} && {card('claimed', dependency)} === null")
    browser.do("fill", selector="#search", text="no such words")
    browser.wait("document.querySelectorAll('.columns .card').length === 0")
    browser.do("fill", selector="#search", text="")
    browser.wait(f"{card('ready', item)} && {card('claimed', dependency)}")

    # cancel with a reason (Enter on an id in the search opens the item)
    browser.do("fill", selector="#search", text=f"#{item}")
    browser.eval(
        "document.getElementById('search').dispatchEvent("
        "new KeyboardEvent('keydown', {key: 'Enter'}))"
    )
    opened(browser, item)
    browser.do("click", selector="#detail .cancel")  # no reason: said, and nothing sent
    assert "reason" in browser.wait(
        "document.querySelector('#detail .state-actions .err').textContent"
    )
    assert show(served, item)["state"] == "pending"
    browser.do("fill", selector="#detail input[name=reason]", text="the README covers it")
    browser.do("click", selector="#detail .cancel")
    browser.wait("document.getElementById('detail').dataset.state === 'cancelled'")
    assert show(served, item)["state"] == "cancelled"
    assert log_of(served, item)[-1] == ("cancelled", "alice")
    browser.wait(f"{card('ready', item)} === null")

    # and reopen it, with a reason, from the same place
    assert browser.eval("document.querySelector('#detail .cancel').hidden")
    browser.do("fill", selector="#detail input[name=reason]", text="the README does not")
    browser.do("click", selector="#detail .reopen")
    browser.wait("document.getElementById('detail').dataset.state === 'pending'")
    assert show(served, item)["state"] == "pending"
    assert log_of(served, item)[-1] == ("reopened", "alice")
    browser.do("fill", selector="#search", text="")
    browser.wait(card("ready", item))
    assert browser.do("problems") == []


def test_the_page_refuses_what_the_cli_refuses(served: Daemon, browser: Browser) -> None:
    item = cli(served, "add", "someone else's work", agent="planner")["id"]
    cli(served, "claim", str(item), agent=AGENT)
    open_page(served, browser)
    browser.wait(card("claimed", item))
    before = cli(served, "log", "--limit", "1000")["events"]

    browser.do("click", selector=f'#col-claimed .card[data-id="{item}"] .open')
    opened(browser, item)
    # a claimed item is its holder's to edit (with its token): the daemon's refusal, shown
    browser.do("fill", selector="#detail .edit input[name=title]", text="taken over")
    browser.do("click", selector="#detail .edit button")
    refusal = browser.wait("document.querySelector('#detail .edit .err').textContent")
    assert AGENT in refusal, refusal
    # alice neither made it nor holds it, and is no human listed in the board's config
    browser.do("fill", selector="#detail input[name=reason]", text="not needed")
    browser.do("click", selector="#detail .cancel")
    refusal = browser.wait("document.querySelector('#detail .state-actions .err').textContent")
    assert "only the holder or a human listed" in refusal, refusal
    # the CLI, as alice, is refused the same, in the same words (one rule, two faces)
    by_cli = run_cli(
        "cancel",
        str(item),
        "--reason",
        "not needed",
        "--json",
        board_dir=served.board_dir,
        agent="alice",
    )
    assert by_cli.returncode != 0
    assert json.loads(by_cli.stdout)["message"] == refusal
    # a PATCH from the page's origin without its session: refused before any rule is asked
    forged = browser.eval(
        f"""fetch('/v1/items/{item}', {{
            method: 'PATCH', credentials: 'same-origin',
            headers: {{'content-type': 'application/json'}},
            body: JSON.stringify({{agent: 'alice', title: 'forged'}}),
        }}).then(async (r) => [r.status, (await r.json()).error])"""
    )
    assert forged == [401, "unauthorized"]
    assert show(served, item)["title"] == "someone else's work"
    assert show(served, item)["state"] == "claimed"
    assert cli(served, "log", "--limit", "1000")["events"] == before  # the board unchanged

    # the holder edits it meanwhile: the item opened shows it, what alice typed stays
    # read as its holder: nobody else is shown a claim's token (issue 27)
    token = str(cli(served, "show", str(item), agent=AGENT)["fencing_token"])
    cli(
        served, "edit", str(item), "--title", "renamed by its holder", "--token", token, agent=AGENT
    )
    browser.wait(
        "document.querySelector('#detail .head .title').textContent === 'renamed by its holder'"
    )
    assert browser.eval("document.querySelector('#detail .edit input[name=title]').value") == (
        "taken over"
    )


def test_a_hostile_title_added_from_the_page_stays_text(served: Daemon, browser: Browser) -> None:
    open_page(served, browser)
    title = '<img src=x onerror="window.pwned=1">Fix & <b>ship</b>'
    browser.do("click", selector="#new-item")
    browser.do("fill", selector="#compose input[name=title]", text=title)
    browser.do(
        "fill", selector="#compose textarea[name=body]", text="<script>window.pwned=2</script>"
    )
    browser.do("click", selector="#compose button[type=submit]")
    added = browser.wait("document.querySelector('#compose .ok').textContent")
    item = int(added.split("#")[1])
    assert show(served, item)["title"] == title  # stored as written
    browser.wait(card("ready", item))
    browser.do("click", selector=f'#col-ready .card[data-id="{item}"] .open')
    opened(browser, item)
    assert browser.eval("document.querySelector('#detail .head .title').textContent") == title
    assert browser.eval("document.querySelector('#detail .facts .body').textContent").startswith(
        "<script>"
    )
    assert (
        browser.eval("document.querySelectorAll('main img, main b:not(header b) script').length")
        == 0
    )
    assert browser.eval("document.querySelectorAll('#detail b, .card .title b').length") == 0
    assert browser.eval("window.pwned === undefined")


AREAS = ["storage", "claims", "events", "the page", "release"]
TASKS = [
    "schema and forward-only migrations",
    "a partial index on pending work",
    "fencing tokens checked on every write",
    "leases judged on the board's clock",
    "reservations granted whole or not at all",
    "refusals that name the holder and the fix",
    "the event stream resumed after a cut",
    "a contract suite run on both backends",
    "the guard refuses what it cannot tell",
    "bench the storm of a hundred agents",
    "docs checked against the code",
    "one duration format everywhere",
    "a person adds and edits from the page",
]


def plan_of_forty() -> list[dict[str, Any]]:
    """40 packages in five layers, titles long enough to wrap."""
    layers = [8, 10, 10, 8, 4]
    packages: list[dict[str, Any]] = []
    previous: list[str] = []
    for depth, width in enumerate(layers):
        current = []
        for n in range(width):
            number = len(packages) + 1
            key = f"P{number}"
            deps = [previous[n % len(previous)]] if previous else []
            if previous and n % 3 == 0:
                deps.append(previous[(n + 1) % len(previous)])
            packages.append(
                {
                    "id": key,
                    "title": f"{AREAS[depth]}: {TASKS[(number * 7) % len(TASKS)]}",
                    "line": 10 * number,
                    "dependencies": sorted(set(deps)),
                    "done": depth == 0 and n < 6,
                }
            )
            current.append(key)
        previous = current
    return packages


def test_a_plan_of_forty_packages_reads_whole(
    served: Daemon, browser: Browser, artifacts: Path
) -> None:
    packages = plan_of_forty()

    def post(path: str, body: dict[str, Any]) -> Any:
        status, answer = served.request("POST", path, body)
        assert status < 300, answer
        return answer

    post("/v1/spec:import", {"agent": "lead", "spec": "docs/plan.md", "packages": packages})
    post("/v1/items/P7/claim", {"agent": "claude-1", "lease_seconds": 900})
    post("/v1/items/P9/claim", {"agent": "codex-2", "lease_seconds": 900})
    asked = post("/v1/items/P10/claim", {"agent": "gemini-3", "lease_seconds": 900})
    post(
        "/v1/items/P10/escalate",
        {"agent": "gemini-3", "token": asked["token"], "question": "which port?"},
    )
    # a check that failed: the evidence stays on the item, which stays claimed
    failed = post("/v1/items", {"agent": "lead", "title": "flaky suite", "checks": ["make test"]})
    token = post(f"/v1/items/{failed['id']}/claim", {"agent": "codex-2"})["token"]
    status, _ = served.request(
        "POST",
        f"/v1/items/{failed['id']}/done",
        {
            "agent": "codex-2",
            "token": token,
            "evidence": [
                {
                    "command": "make test",
                    "exit_code": 2,
                    "duration_s": 243.5,
                    "output_tail": "E   assert 1 == 2\n1 failed",
                }
            ],
        },
    )
    assert status == 422 or status == 409, status
    # one that passed: Done shows its evidence
    passed = post("/v1/items", {"agent": "lead", "title": "lint clean", "checks": ["make lint"]})
    token = post(f"/v1/items/{passed['id']}/claim", {"agent": "claude-1"})["token"]
    post(
        f"/v1/items/{passed['id']}/done",
        {
            "agent": "claude-1",
            "token": token,
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

    open_page(served, browser)
    browser.wait("document.querySelectorAll('#plan svg g[data-id]').length === 40")
    nodes = browser.eval(
        """[...document.querySelectorAll('#plan svg g[data-id]')].map(g => ({
            key: g.querySelector('tspan.key').textContent,
            who: g.querySelector('text.who').textContent,
            title: [...g.querySelectorAll('text.name')].map(t => t.textContent).join(' '),
            status: g.getAttribute('class'),
            size: getComputedStyle(g.querySelector('text.name')).fontSize,
        }))"""
    )
    by_key = {node["key"]: node for node in nodes}
    titles = {p["id"]: p["title"] for p in packages}
    assert {key: node["title"] for key, node in by_key.items()} == titles  # whole titles
    assert {node["size"] for node in nodes} == {"12px"}
    # drawn at its own size: never shrunk to fit the panel (it scrolls instead)
    assert browser.eval(
        "(() => { const s = document.querySelector('#plan svg'); "
        "return Math.round(s.getBoundingClientRect().width) === s.width.baseVal.value; })()"
    )
    browser.wait(card("needs", 10))
    # no card writes an absent field as "null" or "undefined" (no title here has the words)
    cards = browser.eval("[...document.querySelectorAll('.card')].map(c => c.textContent)")
    assert not [text for text in cards if "null" in text or "undefined" in text]
    assert "claimed by claude-1" in by_key["P7"]["who"] and by_key["P7"]["status"] == "claimed"
    assert by_key["P10"]["status"] == "needs" and "gemini-3" in by_key["P10"]["who"]
    assert by_key["P1"]["status"] == "done"
    # the lit packages are exactly the claimable ones, by the board's one predicate
    ready = served.request("GET", "/v1/items?spec=docs/plan.md&ready=true&limit=1000")[1]
    lit = {key for key, node in by_key.items() if node["status"] == "claimable"}
    assert lit == {item["key"] for item in ready["items"]} and lit
    waiting = [node for node in nodes if node["status"] == "waiting"]
    assert waiting and all("waits on P" in node["who"] for node in waiting)
    legend = browser.eval(
        "[...document.querySelectorAll('#plan .legend li')].map(l => l.className)"
    )
    assert sorted(legend) == sorted({"claimable", "claimed", "needs", "landing", "waiting", "done"})
    pending = served.request("GET", "/v1/status")[1]["board"]["counts"]["pending"]
    browser.wait(
        f"document.querySelector('#col-ready .count').textContent === '({len(lit)} of {pending})'"
    )

    # evidence: passed or failed, exit code, duration (the CLI's spelling) and the tail, as text
    browser.wait(card("done", passed["id"]))
    done_text = browser.eval(f"{card('done', passed['id'])}.querySelector('.evidence').textContent")
    assert "checks passed" in done_text and "make lint" in done_text
    assert "exit 0" in done_text and "4s" in done_text
    assert "Success: no issues found" in done_text
    browser.do("click", selector=f'#col-claimed .card[data-id="{failed["id"]}"] .open')
    opened(browser, failed["id"])
    evidence = browser.eval("document.querySelector('#detail .evidence').textContent")
    assert "checks failed" in evidence and "exit 2" in evidence and "4m03s" in evidence
    assert "1 failed" in evidence
    assert browser.eval("document.querySelector('#detail .evidence pre')") is not None
    browser.do("click", selector="#detail .close")

    browser.eval(
        "document.querySelector('#plan .graph').style.maxHeight = 'none'; "
        "document.getElementById('plan').scrollIntoView()"
    )
    shot = artifacts / "plan-graph.png"
    browser.do("screenshotOf", selector="#plan", path=str(shot))
    assert shot.stat().st_size > 10_000
    print(f"\nscreenshot of a 40-package plan: {shot}")
    if os.environ.get("COORD_REFRESH_SCREENSHOT") == "1":  # the docs' picture, on purpose
        shutil.copyfile(shot, Path(__file__).parents[2] / "docs" / "plan-graph.png")
    assert browser.do("problems") == []
