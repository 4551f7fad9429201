"""A worktree item's faces (issue 24) through the real `coord` command against a real daemon,
in a real repository: start, done = submit, the queue, abandon, worktree list and gc."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Daemon, init_board_dir, run_cli, stop_leftover_daemon
from coord import model
from coord.cli import render
from coord.core import landings
from coord.landing import worktrees


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.com")
    (root / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text(".coord/\n.env\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


@pytest.fixture
def served(repo: Path) -> Iterator[Daemon]:
    # what a queued item is and what `coord land` does with it: the daemon lands nothing here
    # (tests/test_landing_in_daemon.py has it land)
    board = init_board_dir(repo, land_in_daemon=False)
    d = Daemon(board).start()
    yield d
    d.stop()
    stop_leftover_daemon(board)


def cli(d: Daemon, *args: str, agent: str = "a", cwd: Path | None = None) -> tuple[int, dict]:
    done = run_cli(*args, "--json", board_dir=d.board_dir, agent=agent, cwd=cwd)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def add(d: Daemon, title: str, *files: str) -> int:
    extra = [a for f in files for a in ("--file", f)]
    code, item = cli(d, "add", title, *extra, agent="h")
    assert code == 0
    return item["id"]


def show(d: Daemon, ref: int) -> dict:
    return cli(d, "show", str(ref))[1]


def started(d: Daemon, ref: int | None = None, agent: str = "a") -> dict:
    code, won = cli(d, "start", *([str(ref)] if ref is not None else []), agent=agent)
    assert code == 0, won
    return won


def commit(wt: Path, name: str, text: str) -> str:
    (wt / name).write_text(text)
    git(wt, "add", name)
    git(wt, "commit", "-qm", name)
    return git(wt, "rev-parse", "HEAD")


def test_the_board_records_the_path_create_makes_for_any_key(tmp_path: Path) -> None:
    """One rule (model.worktree_dirname): the item's recorded worktree is where git makes it."""
    for key in (None, "R3", "harness:R3.b", "x--y"):
        item = model.Item(
            7, "task", "t", "", 2, "pending", "h", None, None, 0, None, 0.0, 0.0, None, key=key
        )
        branch = landings.branch_name(item, 4)
        spec = model.WorktreeSpec("0" * 40, str(tmp_path / "wt"))
        recorded = landings.claim_changes(item, 4, spec)["worktree"]
        assert recorded == str(tmp_path / "wt" / worktrees.dirname_for(branch))


def test_start_claims_and_makes_a_locked_worktree_on_the_recorded_branch(
    served: Daemon, repo: Path
) -> None:
    ref = add(served, "feature", "src/f.py")
    base = git(repo, "rev-parse", "main")
    won = started(served)  # no ID: the best ready item
    item = show(served, ref)
    assert item["state"] == "claimed" and item["claimed_by"] == "a"
    assert item["branch"] == f"coord/{ref}-t{won['token']}"
    assert item["base_commit"] == base
    assert item["worktree"] == won["worktree"]["path"]
    path = Path(item["worktree"])
    assert path.parent == repo / ".worktrees"
    assert git(path, "rev-parse", "--abbrev-ref", "HEAD") == item["branch"]
    assert git(path, "rev-parse", "HEAD") == base
    listed = git(repo, "worktree", "list", "--porcelain")
    assert f"worktree {path}\n" in listed + "\n"
    (found,) = worktrees.list_worktrees(repo)
    assert found.path == path and found.lock is not None
    assert (found.lock.item, found.lock.token) == (ref, won["token"])
    assert found.lock.pid == os.getpid()  # the command's parent: this test
    assert cli(served, "reserve", "src/f.py", agent="b")[0] == 3  # its files held from the claim
    text = run_cli("start", board_dir=served.board_dir, agent="b")
    assert text.returncode == 4  # nothing else ready: nothing made
    assert len(worktrees.list_worktrees(repo)) == 1


def test_a_failed_worktree_releases_the_claim_and_says_why(served: Daemon, repo: Path) -> None:
    ref = add(served, "blocked by a directory")
    # the path the board will record for token 1 is taken by a file: git cannot add it there
    (repo / ".worktrees").mkdir()
    (repo / ".worktrees" / f"{ref}-t1").write_text("in the way\n")
    done = run_cli("start", str(ref), board_dir=served.board_dir, agent="a")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    item = show(served, ref)
    assert item["state"] == "pending" and item["claimed_by"] is None
    assert "could not make the worktree" in done.stderr
    assert "already exists" in done.stderr  # git's reason
    assert "the claim is released" in done.stderr
    assert worktrees.list_worktrees(repo) == []


def test_done_in_a_dirty_worktree_is_refused_and_changes_nothing(
    served: Daemon, repo: Path
) -> None:
    ref = add(served, "dirty", "src/f.py")
    won = started(served, ref)
    path = Path(won["worktree"]["path"])
    commit(path, "f.txt", "one\n")
    (path / "loose.txt").write_text("untracked\n")
    before = show(served, ref)
    code, err = cli(served, "done", cwd=path)  # no ID: the worktree's item
    assert code == 3 and "uncommitted" in err["message"], err
    after = show(served, ref)
    assert after["state"] == "claimed" and after["submitted_head"] is None
    assert after["updated_at"] == before["updated_at"]
    (path / "loose.txt").unlink()
    (path / "f.txt").write_text("changed, not staged\n")
    code, err = cli(served, "done", str(ref))
    assert code == 3 and "uncommitted" in err["message"]
    assert "(f.txt)" in err["message"], err  # the file named whole, its status column dropped
    git(path, "checkout", "--", "f.txt")
    git(path, "switch", "-q", "-c", "elsewhere")
    code, err = cli(served, "done", str(ref))
    assert code == 3 and "not on the item's branch" in err["message"]
    assert show(served, ref)["state"] == "claimed"


def test_done_of_a_clean_worktree_queues_it_and_its_files_stay_held(
    served: Daemon, repo: Path
) -> None:
    ref = add(served, "clean", "src/f.py")
    won = started(served, ref)
    path = Path(won["worktree"]["path"])
    head = commit(path, "f.txt", "one\n")
    code, item = cli(served, "done", cwd=path)
    assert code == 0, item
    assert item["state"] == "queued" and item["submitted_head"] == head
    shown = show(served, ref)
    assert shown["state"] == "queued" and shown["submitted_head"] == head
    # the files stay held, by the queue, against anyone else
    code, err = cli(served, "reserve", "src/f.py", agent="b")
    assert code == 3, err
    assert "ask coord/queue" not in err["message"], err  # nobody to ask: it waits to land
    assert "merged or abandoned" in err["message"], err
    text = run_cli("queue", board_dir=served.board_dir, agent="h")
    assert text.returncode == 0 and won["item"]["branch"] in text.stdout
    code, queue = cli(served, "queue")
    assert [(q["id"], q["submitted_head"]) for q in queue["items"]] == [(ref, head)]
    code, listed = cli(served, "ls", "--state", "queued")
    assert code == 0 and [i["id"] for i in listed["items"]] == [ref]
    shown = run_cli("show", str(ref), board_dir=served.board_dir).stdout
    assert f"branch {won['item']['branch']} from" in shown
    assert f"submitted {head[:12]}" in shown and "queued to land" in shown
    # the live views show the queue: `coord watch` has a Landing panel
    watched = run_cli("watch", "--once", board_dir=served.board_dir, env={"COLUMNS": "200"})
    assert watched.returncode == 0, watched.stderr
    assert "Landing 1" in watched.stdout and "queued" in watched.stdout
    assert won["item"]["branch"] in watched.stdout and head[:10] in watched.stdout
    code, snap = cli(served, "watch", "--once")
    assert [(e["id"], e["state"], e["head"]) for e in snap["landing"]] == [(ref, "queued", head)]
    # the token is over: a second done is refused
    assert run_cli("done", str(ref), board_dir=served.board_dir, agent="a").returncode != 0


def test_done_of_an_item_claimed_without_a_worktree_is_unchanged(served: Daemon) -> None:
    ref = add(served, "plain", "src/p.py")
    assert cli(served, "claim", str(ref))[0] == 0
    code, item = cli(served, "done", str(ref))
    assert code == 0 and item["state"] == "done" and item["branch"] is None
    assert cli(served, "reserve", "src/p.py", agent="b")[0] == 0  # its files were freed


def test_abandon_frees_the_files_and_gc_never_removes_unmerged_work(
    served: Daemon, repo: Path
) -> None:
    ref = add(served, "given up", "src/g.py")
    won = started(served, ref)
    path = Path(won["worktree"]["path"])
    commit(path, "g.txt", "work\n")
    assert cli(served, "done", str(ref))[0] == 0
    code, listed = cli(served, "worktree", "list")
    assert code == 0, listed
    (wt,) = listed["worktrees"]
    assert (wt["item"], wt["state"], wt["clean"], wt["removable"]) == (ref, "queued", True, False)
    code, item = cli(served, "abandon", str(ref), "--reason", "not wanted", agent="a")
    assert code == 0 and item["state"] == "pending"
    assert cli(served, "reserve", "src/g.py", agent="b")[0] == 0
    code, dry = cli(served, "worktree", "gc", "--dry-run")
    (wt,) = dry["worktrees"]
    assert code == 0 and not wt["removable"] and not wt["removed"]
    assert "1 commit(s) not on main" in wt["reason"]
    code, gone = cli(served, "worktree", "gc")
    (wt,) = gone["worktrees"]
    # its commit is on no main and in no snapshot: kept, with the reason
    assert not wt["removed"] and "neither on main nor in a snapshot" in wt["reason"]
    assert path.is_dir() and git(repo, "rev-parse", won["item"]["branch"])


def test_gc_removes_a_released_items_worktree_that_holds_nothing_new(
    served: Daemon, repo: Path
) -> None:
    ref = add(served, "released")
    won = started(served, ref)
    path = Path(won["worktree"]["path"])
    assert cli(served, "worktree", "gc")[1]["worktrees"][0]["removed"] is False  # claimed
    assert cli(served, "release", str(ref))[0] == 0
    code, dry = cli(served, "worktree", "gc", "--dry-run")
    assert code == 0 and dry["worktrees"][0]["removable"] and path.is_dir()
    said = run_cli("worktree", "gc", "--dry-run", board_dir=served.board_dir).stdout
    assert f"would remove {path}" in said
    code, gone = cli(served, "worktree", "gc")
    assert code == 0 and gone["worktrees"][0]["removed"], gone
    assert not path.exists()


def test_the_mcp_claim_makes_a_worktree_and_done_submits_it(
    served: Daemon, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from mcp import Client

    from coord.mcp.backends import HttpBackend
    from coord.mcp.tools import build_server

    ref = add(served, "through MCP", "src/m.py")
    monkeypatch.chdir(repo)
    server = build_server(HttpBackend(served.board_dir), lambda ctx: "mcp-a")

    async def go(calls: list[tuple[str, dict]]) -> list:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    (won,) = asyncio.run(go([("claim", {"worktree": True})]))
    assert not won.is_error, won.structured_content
    view = won.structured_content
    path = Path(view["worktree"])
    assert view["id"] == ref and "work in" in view["work_in"] and path.is_dir()
    assert show(served, ref)["worktree"] == str(path)
    (path / "m.txt").write_text("uncommitted\n")
    (dirty,) = asyncio.run(go([("done", {"item": ref})]))
    assert dirty.is_error and "uncommitted" in dirty.structured_content["message"]
    assert show(served, ref)["state"] == "claimed"
    head = commit(path, "m.txt", "committed\n")
    (submitted, board) = asyncio.run(go([("done", {"item": ref}), ("board", {})]))
    assert not submitted.is_error, submitted.structured_content
    assert submitted.structured_content["state"] == "queued"
    assert "queued to land" in submitted.structured_content["next"]
    landing = board.structured_content["landing"]
    assert [(i["id"], i["state"], i["head"]) for i in landing] == [(ref, "queued", head)]
    assert show(served, ref)["submitted_head"] == head


def test_start_in_worktree_makes_it_the_mcp_claims_default(
    served: Daemon, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from mcp import Client

    from coord.fast import board_files
    from coord.mcp.backends import HttpBackend
    from coord.mcp.tools import build_server

    config = board_files.read_config(served.board_dir)
    board_files.write_config(served.board_dir, {**config, "start_in_worktree": True})
    first, second = add(served, "by default"), add(served, "not this time")
    monkeypatch.chdir(repo)
    server = build_server(HttpBackend(served.board_dir), lambda ctx: "mcp-b")

    async def go() -> list:
        async with Client(server) as client:
            return [
                await client.call_tool("claim", {"item": first}),
                await client.call_tool("claim", {"item": second, "worktree": False}),
            ]

    with_one, without = asyncio.run(go())
    assert Path(with_one.structured_content["worktree"]).is_dir()
    assert "worktree" not in without.structured_content
    assert show(served, second)["branch"] is None


def test_a_reworked_item_started_again_keeps_its_branch_and_commits(
    served: Daemon, repo: Path
) -> None:
    ref = add(served, "sent back", "src/r.py")
    won = started(served, ref)
    path = Path(won["worktree"]["path"])
    head = commit(path, "r.txt", "first try\n")
    assert cli(served, "done", str(ref))[0] == 0
    status, lease = served.request("POST", "/v1/landing/acquire", {"runner": "lander"})
    assert status == 200, lease
    status, back = served.request(
        "POST",
        f"/v1/items/{ref}/needs-rework",
        {
            "runner": "lander",
            "landing_token": lease["token"],
            "item_token": won["token"],
            "facts": {"reason": "conflict", "files": ["r.txt"]},
        },
    )
    assert status == 200 and back["state"] == "needs_rework", back
    git(repo, "commit", "-q", "--allow-empty", "-m", "main moved on")
    again = started(served, ref)
    assert again["token"] > won["token"]
    assert again["worktree"]["contains_base"] is False  # it says to rebase first
    made = again["worktree"]
    assert made["reused"] == won["item"]["branch"]  # renamed, not made anew
    new_path = Path(made["path"])
    assert git(new_path, "rev-parse", "HEAD") == head  # the first try's commit is there
    assert git(new_path, "rev-parse", "--abbrev-ref", "HEAD") == again["item"]["branch"]
    assert not path.exists()  # moved, not copied
    assert not git(repo, "branch", "--list", won["item"]["branch"])
    assert show(served, ref)["worktree"] == str(new_path)
    # the claim carries why it came back, in words too
    said = render.claim_line(again)
    assert "sent back from landing: conflict in r.txt" in said
    # its base is main's tip now: done wants it in the branch, so rebase first
    code, err = cli(served, "done", cwd=new_path)
    assert code == 3 and "git rebase" in err["message"], err
    git(new_path, "rebase", "-q", again["item"]["base_commit"])
    code, queued = cli(served, "done", cwd=new_path)
    assert code == 0 and queued["state"] == "queued", queued


def test_a_released_item_taken_by_next_again_goes_on_in_its_worktree(
    served: Daemon, repo: Path
) -> None:
    ref = add(served, "picked up again")
    won = started(served)
    path = Path(won["worktree"]["path"])
    head = commit(path, "w.txt", "half done\n")
    (path / "notes.txt").write_text("uncommitted thoughts\n")
    assert cli(served, "release", str(ref))[0] == 0
    again = started(served, agent="b")  # claim-next: no ID
    made = again["worktree"]
    assert again["id"] == ref and made["reused"] == won["item"]["branch"]
    new_path = Path(made["path"])
    assert git(new_path, "rev-parse", "HEAD") == head
    assert (new_path / "notes.txt").read_text() == "uncommitted thoughts\n"
    # before the move, its uncommitted work was kept in a snapshot (promise 18), which the
    # new claim is not told to resume: the work is already here
    assert made["moved_from"] == str(path)
    kept = made["kept_in"]
    assert kept.startswith("refs/coord/snapshots/") and git(repo, "rev-parse", f"{kept}^1") == head
    assert git(repo, "show", f"{kept}:notes.txt") == "uncommitted thoughts"
    assert kept not in [s["ref"] for s in made["snapshots"]]


def test_worktree_list_says_a_dead_owner_and_gc_keeps_a_live_claim(
    served: Daemon, repo: Path
) -> None:
    ref = add(served, "owner gone")
    gone = subprocess.Popen(["true"])
    gone.wait()
    done = run_cli(
        "start",
        str(ref),
        "--json",
        board_dir=served.board_dir,
        agent="a",
        env={"COORD_AGENT_PID": str(gone.pid)},
    )
    assert done.returncode == 0, done.stderr
    code, listed = cli(served, "worktree", "list")
    (wt,) = listed["worktrees"]
    assert (wt["item"], wt["pid"], wt["alive"], wt["clean"]) == (ref, gone.pid, False, True)
    assert wt["state"] == "claimed" and not wt["removable"]
    text = run_cli("worktree", "list", board_dir=served.board_dir).stdout
    assert f"{gone.pid} dead" in text and "claimed by a" in text
    code, kept = cli(served, "worktree", "gc")
    assert code == 0 and not kept["worktrees"][0]["removed"]
    assert Path(wt["path"]).is_dir()


def test_gc_removes_a_merged_items_worktree_and_branch(served: Daemon, repo: Path) -> None:
    ref = add(served, "landed by hand")
    won = started(served, ref)
    path, branch = Path(won["worktree"]["path"]), won["item"]["branch"]
    head = commit(path, "m.txt", "merged\n")
    git(repo, "merge", "-q", "--ff-only", branch)  # a human lands it
    status, merged = served.request(
        "POST",
        f"/v1/items/{ref}/merged-outside",
        {"agent": "h", "commit": head, "found_by": "ancestry"},
    )
    assert status == 200 and merged["state"] == "merged", merged
    code, gone = cli(served, "worktree", "gc")
    (wt,) = gone["worktrees"]
    assert code == 0 and wt["removed"] and "merged" in wt["reason"]
    assert not path.exists() and not git(repo, "branch", "--list", branch)
    assert git(repo, "rev-parse", "main") == head  # main keeps the work


def test_start_and_done_say_where_to_work_and_that_it_is_queued(served: Daemon, repo: Path) -> None:
    ref = add(served, "said plainly", "src/s.py")
    said = run_cli("start", str(ref), board_dir=served.board_dir, agent="a")
    assert said.returncode == 0, said.stderr
    path = repo / ".worktrees" / f"{ref}-t1"
    assert f"work in {path} (branch coord/{ref}-t1)" in said.stdout
    commit(path, "s.txt", "x\n")
    done = run_cli("done", board_dir=served.board_dir, agent="a", cwd=path)
    assert done.returncode == 0, done.stderr
    assert "is queued to land" in done.stdout and "stay held" in done.stdout
    assert "src/s.py" in done.stdout


def test_the_worktree_belongs_to_the_agent_not_the_shell_it_ran_start_in(
    served: Daemon, repo: Path
) -> None:
    """An agent's client runs each command in `sh -c`, which ends with it: the lock names the
    process past it (here this test), else every worktree would look dead at once."""
    import shlex
    import sys

    ref = add(served, "through a shell")
    env = {**os.environ, "COORD_DIR": str(served.board_dir), "COORD_AGENT": "a"}
    command = f"{shlex.quote(sys.executable)} -m coord start {ref} --json"
    done = subprocess.run(
        ["sh", "-c", command + "; true"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    (found,) = worktrees.list_worktrees(repo)
    assert found.lock is not None and found.lock.pid == os.getpid() and found.alive


def test_start_offers_a_snapshot_of_earlier_work_and_resumes_it(served: Daemon, repo: Path) -> None:
    from coord.landing import removal

    ref = add(served, "crashed mid-work")
    won = started(served, ref)
    path = Path(won["worktree"]["path"])
    head = commit(path, "c.txt", "committed\n")
    (path / "c.txt").write_text("committed\nand more, unstaged\n")
    (path / "new.txt").write_text("untracked\n")
    # what a sweeper does to a dead agent's worktree: keep its work, then remove it
    kept = removal.remove(repo, path, force_snapshot=True)
    assert not path.exists() and kept.snapshots
    assert cli(served, "release", str(ref))[0] == 0
    offered = started(served, ref, agent="b")
    snapshots = offered["worktree"]["snapshots"]
    assert snapshots and snapshots[0]["ref"] == kept.snapshots[0]
    said = run_cli("release", str(ref), board_dir=served.board_dir, agent="b")
    assert said.returncode == 0, said.stderr
    code, resumed = cli(served, "start", str(ref), "--resume", snapshots[0]["ref"], agent="b")
    assert code == 0, resumed
    where = Path(resumed["worktree"]["path"])
    assert git(where, "rev-parse", "HEAD") == head
    assert git(where, "rev-parse", "--abbrev-ref", "HEAD") == resumed["item"]["branch"]
    assert (where / "c.txt").read_text() == "committed\nand more, unstaged\n"
    assert (where / "new.txt").read_text() == "untracked\n"
    assert cli(served, "release", str(ref), agent="b")[0] == 0
    code, err = cli(served, "start", str(ref), "--resume", "refs/coord/snapshots/nope")
    assert code == 5 and "no snapshot" in err["message"], err
    assert show(served, ref)["state"] == "pending"  # refused before any claim


def test_a_failing_setup_is_said_and_the_worktree_kept(served: Daemon, repo: Path) -> None:
    from coord.fast import board_files

    config = board_files.read_config(served.board_dir)
    setup = "echo setting up; echo broken >&2; exit 3"
    board_files.write_config(served.board_dir, {**config, "worktree_setup": setup})
    ref = add(served, "needs a setup")
    said = run_cli("start", str(ref), board_dir=served.board_dir, agent="a")
    assert said.returncode == 0, said.stderr
    assert "the setup command failed (exit 3)" in said.stdout and "broken" in said.stdout
    assert show(served, ref)["state"] == "claimed"  # the agent may fix it there
