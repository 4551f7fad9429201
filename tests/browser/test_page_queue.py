"""The live page's landing queue in a real browser (issue 24): a real daemon, a real git
repository, items claimed with worktrees over HTTP, submitted, and landed by a real
`coord land` process. The page, open all along, must show each item in its group (landing
now, queued, needs rework, merged) with its reason, each claim's branch and worktree, and
follow every transition from the event stream without a reload, showing titles and check
output as text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Daemon

from coord.landing import worktrees

from .conftest import Browser, card, open_page

HOSTILE = '<img src=x onerror="window.pwned=1">land me'


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout.strip()


def make_repo(daemon: Daemon) -> Path:
    """The board's repository: main checked out at its root, one commit, .coord/ ignored."""
    root = daemon.board_dir.parent
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / ".git/info/exclude").write_text(".coord/\n")
    (root / "src").mkdir()
    (root / "src/app.py").write_text("A = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def ok(daemon: Daemon, method: str, path: str, body: Any = None) -> Any:
    status, answer = daemon.request(method, path, body)
    assert status < 300, (status, answer)
    return answer


def add(daemon: Daemon, title: str, **fields: Any) -> int:
    return int(ok(daemon, "POST", "/v1/items", {"agent": "lead", "title": title, **fields})["id"])


def start(daemon: Daemon, repo: Path, item: int, agent: str) -> dict[str, Any]:
    """Claim ``item`` with a worktree over HTTP and make the worktree, as `coord start` does."""
    base = git(repo, "rev-parse", "main")
    spec = {"base_commit": base, "path_root": str(repo / ".worktrees")}
    claim = ok(daemon, "POST", f"/v1/items/{item}/claim", {"agent": agent, "worktree": spec})
    shown = ok(daemon, "GET", f"/v1/items/{item}")
    made = worktrees.create(
        repo, shown["branch"], base, item=item, token=claim["token"], root=repo / ".worktrees"
    )
    assert Path(made.path) == Path(shown["worktree"])
    return {"token": claim["token"], "branch": shown["branch"], "worktree": made.path}


def submit(daemon: Daemon, item: int, agent: str, held: dict[str, Any], writes: dict) -> None:
    wt = Path(held["worktree"])
    for path, text in writes.items():
        (wt / path).parent.mkdir(parents=True, exist_ok=True)
        (wt / path).write_text(text)
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", f"item {item}")
    head = git(wt, "rev-parse", "HEAD")
    body = {"agent": agent, "token": held["token"], "head": head}
    ok(daemon, "POST", f"/v1/items/{item}/submit", body)


def group(name: str) -> str:
    """A JavaScript expression: the ids shown in one group of the queue panel, in order."""
    return f"[...document.querySelectorAll('#queue-{name} .card')].map(c => +c.dataset.id)"


def text_of(name: str, item: int) -> str:
    return f"document.querySelector('#queue-{name} .card[data-id=\"{item}\"]').textContent"


def test_the_queue_panel_follows_a_real_landing(
    served: Daemon, browser: Browser, tmp_path: Path, artifacts: Path
) -> None:
    repo = make_repo(served)
    good = add(served, HOSTILE, files=["src/good.py"])
    clash = add(served, "change the app")
    # the runner stays on this item's check until the test lets it go: "landing now" is seen
    go = tmp_path / "go"
    check = (
        f"i=0; while [ ! -e {go} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; "
        "echo '<script>window.pwned=2</script>boom: 3 failed'; exit 1"
    )
    bad = add(served, "break it", checks=[check])
    wip = add(served, "still working")
    open_page(served, browser)

    # a claim with a worktree: its branch and path on its card, live
    held = start(served, repo, wip, "carol")
    browser.wait(f"{card('claimed', wip)} && {card('claimed', wip)}.querySelector('.worktree')")
    shown = browser.eval(f"{card('claimed', wip)}.querySelector('.worktree').textContent")
    assert held["branch"] in shown and str(held["worktree"]) in shown, shown

    for item, agent, writes in (
        (good, "alice", {"src/good.py": "G = 1\n"}),
        (clash, "bob", {"src/app.py": "A = 2\n"}),
        (bad, "dave", {"src/bad.py": "B = 1\n"}),
    ):
        submit(served, item, agent, start(served, repo, item, agent), writes)
    browser.wait(f"{group('queued')}.join() === '{good},{clash},{bad}'")  # submit order
    assert browser.eval(f"{card('claimed', good)} === null")
    queued = browser.eval(text_of("queued", good))
    assert HOSTILE in queued and "alice" in queued and "coord/" in queued, queued
    assert "next to land" in queued, queued
    # a human's commit to main meanwhile: the second item will conflict with it
    (repo / "src/app.py").write_text("A = 3\n")
    git(repo, "commit", "-qam", "human")

    env = {**os.environ, "COORD_DIR": str(served.board_dir), "COORD_AGENT": "lander"}
    env.pop("COORD_AGENT_PID", None)
    runner = subprocess.Popen(
        [sys.executable, "-m", "coord", "land"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        browser.wait(f"{group('landing')}.join() === '{bad}'", timeout=60)
        assert "lander" in browser.eval(text_of("landing", bad))
        browser.wait(f"{group('merged')}.includes({good})", timeout=20)
        browser.wait(f"{group('rework')}.includes({clash})", timeout=20)
    finally:
        go.touch()
        out, err = runner.communicate(timeout=120)
    assert runner.returncode == 1, out + err  # an item was sent back
    assert "Traceback" not in err, err

    browser.wait(f"{group('rework')}.join() === '{clash},{bad}'", timeout=20)
    browser.wait(f"{group('landing')}.length === 0 && {group('queued')}.length === 0")
    merged = ok(served, "GET", f"/v1/items/{good}")
    assert merged["state"] == "merged"
    assert merged["merged_commit"][:10] in browser.eval(text_of("merged", good))
    assert HOSTILE in browser.eval(text_of("merged", good))

    conflict = browser.eval(text_of("rework", clash))
    assert "conflict" in conflict and "src/app.py" in conflict and "bob" in conflict, conflict
    failed = browser.eval(text_of("rework", bad))
    assert "check failed" in failed and "dave" in failed, failed
    output = browser.eval(
        f"document.querySelector('#queue-rework .card[data-id=\"{bad}\"] pre').textContent"
    )
    assert "<script>window.pwned=2</script>boom: 3 failed" in output, output

    # the claim still being worked is where it was, with its worktree
    assert str(held["worktree"]) in browser.eval(f"{card('claimed', wip)}.textContent")
    # text, never markup: nothing the board said became an element or ran
    assert browser.eval("document.querySelectorAll('#landing img, #landing script').length") == 0
    assert browser.eval("window.pwned === undefined")
    assert browser.do("loads") == 1  # all of it without a reload
    assert browser.do("problems") == []
    shot = artifacts / "landing-queue.png"
    browser.do("screenshot", path=str(shot))
    print(f"\nscreenshot of the landing queue: {shot}")


def test_the_queue_panel_reads_the_board_as_it_is_when_opened(
    served: Daemon, browser: Browser
) -> None:
    """A page opened after the landing: the groups come from the board, not from events it
    saw; an item abandoned later leaves the panel live."""
    repo = make_repo(served)
    bad = add(served, "break it", checks=["echo 'boom' && exit 1"])
    waits = add(served, "waits its turn")
    submit(served, bad, "alice", start(served, repo, bad, "alice"), {"src/b.py": "B = 1\n"})
    done = subprocess.run(
        [sys.executable, "-m", "coord", "land"],
        cwd=repo,
        env={**os.environ, "COORD_DIR": str(served.board_dir), "COORD_AGENT": "lander"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    submit(served, waits, "bob", start(served, repo, waits, "bob"), {"src/w.py": "W = 1\n"})
    open_page(served, browser)
    browser.wait(f"{group('rework')}.join() === '{bad}'")
    assert browser.eval(f"{group('queued')}.join()") == str(waits)
    assert "check failed" in browser.eval(text_of("rework", bad))
    assert browser.eval("document.querySelector('#landing h2 .count').textContent") == "(2)"

    ok(served, "POST", f"/v1/items/{waits}/abandon", {"agent": "bob", "reason": "not needed"})
    browser.wait(f"{group('queued')}.length === 0")
    browser.wait(card("ready", waits))
    assert browser.do("loads") == 1
    assert browser.do("problems") == []


def test_a_landing_waiting_for_the_checkout_of_main_says_so_on_the_page(
    served: Daemon, browser: Browser
) -> None:
    """Local changes in the checkout of main stop the landing: nothing for the item's holder
    to fix, so it stays queued, and the page says why it waits and where, until it lands."""
    repo = make_repo(served)
    item = add(served, "change app")
    submit(served, item, "alice", start(served, repo, item, "alice"), {"src/app.py": "A = 2\n"})
    open_page(served, browser)
    browser.wait(f"{group('queued')}.join() === '{item}'")
    assert browser.eval("document.querySelector('#queue-queued .waiting')") is None

    (repo / "src/app.py").write_text("A = <b>human's work</b> in progress\n")
    land = [sys.executable, "-m", "coord", "land"]
    env = {**os.environ, "COORD_DIR": str(served.board_dir), "COORD_AGENT": "lander"}
    done = subprocess.run(land, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "src/app.py" in done.stdout, done.stdout + done.stderr
    waiting = f"document.querySelector('#queue-queued .card[data-id=\"{item}\"] .waiting')"
    browser.wait(waiting)
    said = browser.eval(f"{waiting}.textContent")
    assert "local changes" in said and "src/app.py" in said and str(repo) in said, said
    assert browser.eval(f"{group('queued')}.join()") == str(item)  # still queued
    assert browser.eval(f"{group('rework')}.length") == 0  # nothing for alice to fix

    git(repo, "checkout", "--", "src/app.py")  # the human puts it aside
    done = subprocess.run(land, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    browser.wait(f"{group('merged')}.join() === '{item}' && {group('queued')}.length === 0")
    assert browser.eval("document.querySelector('#landing .waiting')") is None
    assert browser.do("loads") == 1
    assert browser.do("problems") == []
