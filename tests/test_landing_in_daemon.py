"""The daemon lands the queue itself (issue 24 item 3): a real `coord serve` process in a real
repository, items claimed, committed and submitted over HTTP, and no `coord land` run unless
the test says so. What is asserted is read from git, the board and the daemon's process.

- a submitted item becomes merged by the daemon's runner alone;
- `land_in_daemon: false` or `coord serve --no-land`: it stays queued, `coord land` lands it;
- an on-demand daemon with a runner still idles out (the runner's polling is not activity),
  but never in the middle of a landing;
- `coord land` beside the daemon's runner: they take turns on the lease, each item lands once;
- a runner that fails says so (the log, `coord status`) and lands again once the cause is gone;
- SIGTERM while a check runs: the check is ended, the lease given back, main untouched, and the
  next daemon lands the item.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import landing_support
from conftest import Daemon, init_board_dir, run_cli, stop_leftover_daemon
from coord.client.http import Client
from coord.core.board import Board
from coord.fast import board_files
from coord.fast.processes import alive
from coord.landing import in_daemon
from landing_support import git, main_log, make_repo

WITHIN = 60.0  # seconds a test waits for what must happen (never asserted as a speed)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def serve(board_dir: Path, *args: str) -> Daemon:
    """`coord serve ARGS` for the board, as the conftest daemon is started."""
    record = board_files.daemon_record_path(board_dir)
    record.unlink(missing_ok=True)
    d = Daemon(board_dir)
    d.log_path = board_dir / "daemon-test.log"
    with d.log_path.open("ab") as log:
        d.process = subprocess.Popen(
            [sys.executable, "-m", "coord", "serve", "--port", "0", *args],
            env={**os.environ, "COORD_DIR": str(board_dir)},
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert d.process.poll() is None, d.log_path.read_text()
        try:
            data = json.loads(record.read_text())
            if data.get("pid") == d.process.pid:
                d.url = data["url"]
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    d.token = board_files.read_token(board_dir)
    return d


@pytest.fixture
def daemons() -> Iterator[list[Daemon]]:
    started: list[Daemon] = []
    yield started
    for d in started:
        d.stop()
        stop_leftover_daemon(d.board_dir)


def ok(daemon: Daemon, method: str, path: str, body: Any = None) -> Any:
    status, answer = daemon.request(method, path, body)
    assert status < 300, (status, answer)
    return answer


def submit(daemon: Daemon, repo: Path, title: str, writes: dict[str, str], **fields: Any) -> dict:
    return landing_support.submit(partial(ok, daemon), repo, title, writes, **fields)


def state_of(daemon: Daemon, item: int) -> str:
    return str(ok(daemon, "GET", f"/v1/items/{item}")["state"])


def wait_merged(daemon: Daemon, item: int) -> dict:
    deadline = time.monotonic() + WITHIN
    while state_of(daemon, item) != "merged":
        assert time.monotonic() < deadline, daemon.log_path.read_text()
        time.sleep(0.2)
    return dict(ok(daemon, "GET", f"/v1/items/{item}"))


def status(board_dir: Path) -> dict:
    done = run_cli("status", "--json", board_dir=board_dir)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def gone(pid: int, within: float = WITHIN) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


def test_a_submitted_item_is_merged_by_the_daemon_with_no_coord_land(
    repo: Path, daemons: list[Daemon]
) -> None:
    d = serve(init_board_dir(repo))
    daemons.append(d)
    before = git(repo, "rev-parse", "main")
    moves = len(main_log(repo))
    item = submit(d, repo, "add new", {"src/new.py": "N = 1\n"}, checks=["test -f src/new.py"])
    merged = wait_merged(d, item["id"])
    assert git(repo, "rev-parse", "main") == merged["merged_commit"]
    assert git(repo, "rev-list", "--count", f"{before}..main") == "1"
    assert len(main_log(repo)) == moves + 1
    assert (repo / "src/new.py").read_text() == "N = 1\n"  # the checkout of main moved with it
    # with the user's modes, not the daemon's private ones (its own files are owner-only)
    mask = os.umask(0)
    os.umask(mask)
    assert (repo / "src/new.py").stat().st_mode & 0o777 == 0o666 & ~mask
    events = ok(d, "GET", f"/v1/events?item={item['id']}&limit=100")["events"]
    assert [e["agent"] for e in events if e["kind"] == "merged"] == [in_daemon.RUNNER_NAME]
    landing = status(d.board_dir)["daemon"]["landing"]
    assert landing["in_daemon"] is True and landing["landed"] == 1, landing
    assert landing["state"] in ("watching", "starting"), landing
    assert "landing: item" in d.log_path.read_text()  # what it landed, in the daemon's log


@pytest.mark.parametrize("off", ["the setting", "the option"])
def test_turned_off_the_daemon_leaves_the_item_queued_for_coord_land(
    repo: Path, daemons: list[Daemon], off: str
) -> None:
    if off == "the setting":
        d = serve(init_board_dir(repo, land_in_daemon=False))
    else:
        d = serve(init_board_dir(repo), "--no-land")
    daemons.append(d)
    before = git(repo, "rev-parse", "main")
    item = submit(d, repo, "add new", {"src/new.py": "N = 1\n"})
    time.sleep(in_daemon.POLL_SECONDS + 2)  # a runner would have woken and polled by now
    assert state_of(d, item["id"]) == "queued"
    assert git(repo, "rev-parse", "main") == before
    landing = status(d.board_dir)["daemon"]["landing"]
    assert landing["in_daemon"] is False
    assert ("land_in_daemon" if off == "the setting" else "--no-land") in landing["off"]
    done = run_cli("land", board_dir=d.board_dir, cwd=repo, agent="lander")
    assert done.returncode == 0, done.stdout + done.stderr
    assert state_of(d, item["id"]) == "merged"


def test_no_runner_outside_a_git_repository(tmp_path: Path, daemons: list[Daemon]) -> None:
    d = serve(init_board_dir(tmp_path))
    daemons.append(d)
    landing = status(d.board_dir)["daemon"]["landing"]
    assert landing["in_daemon"] is False and "no git repository" in landing["off"]


def _on_demand(board_dir: Path) -> int:
    """Start the board's daemon as any command does (with the board's idle_exit_seconds)."""
    assert run_cli("ls", board_dir=board_dir).returncode == 0
    return int(json.loads(board_files.daemon_record_path(board_dir).read_text())["pid"])


def test_an_idle_daemon_with_a_runner_still_idles_out(repo: Path) -> None:
    # longer than the runner's poll: counted as activity, its polling would keep the daemon
    idle = in_daemon.POLL_SECONDS + 2
    board_dir = init_board_dir(repo, idle_exit_seconds=idle)
    try:
        pid = _on_demand(board_dir)
        assert status(board_dir)["daemon"]["landing"]["in_daemon"] is True
        assert gone(pid, within=idle * 4), "the daemon's own runner kept it from idling out"
        assert f"idle for {idle:g} s" in (board_dir / "daemon.log").read_text()
    finally:
        stop_leftover_daemon(board_dir)


def test_a_landing_in_progress_keeps_an_idle_daemon_until_it_is_merged(
    repo: Path, tmp_path: Path
) -> None:
    started = tmp_path / "check-started"
    board_dir = init_board_dir(repo, idle_exit_seconds=1)
    try:
        pid = _on_demand(board_dir)
        client = Client(board_dir, autostart=False)
        check = f"touch {started}; sleep 4"  # four idle bounds while the check runs
        item = landing_support.submit(
            client.call, repo, "slow", {"src/slow.py": "S = 1\n"}, checks=[check]
        )
        assert gone(pid), "the daemon never idled out"
        assert started.exists(), (board_dir / "daemon.log").read_text()
        board = Board.open(board_dir)  # the daemon is gone: the board's own files
        try:
            merged = board.get(item["id"])
        finally:
            board.close()
        # merged: done, with its commit on main (the listing's "merged")
        assert merged.state == "done", (board_dir / "daemon.log").read_text()
        assert git(repo, "rev-parse", "main") == merged.merged_commit
    finally:
        stop_leftover_daemon(board_dir)


def test_coord_land_beside_the_daemons_runner_lands_each_item_once(
    repo: Path, daemons: list[Daemon]
) -> None:
    d = serve(init_board_dir(repo))
    daemons.append(d)
    before = git(repo, "rev-parse", "main")
    moves = len(main_log(repo))
    env = {**os.environ, "COORD_DIR": str(d.board_dir), "COORD_AGENT": "lander"}
    items, landers = [], []
    for n in range(3):
        writes = {f"src/f{n}.py": f"F = {n}\n"}
        items.append(submit(d, repo, f"item {n}", writes, checks=["sleep 1"]))
        landers.append(
            subprocess.Popen(
                [sys.executable, "-m", "coord", "land"],
                cwd=repo,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for lander in landers:
        out, err = lander.communicate(timeout=WITHIN)
        assert lander.returncode == 0, out + err
        assert "Traceback" not in err, err
    for item in items:
        wait_merged(d, item["id"])
    assert len(main_log(repo)) == moves + 3  # main moved once per item
    subjects = git(repo, "log", "--format=%s", f"{before}..main").splitlines()
    assert sorted(subjects) == sorted(f"item {n}: src/f{n}.py" for n in range(3))
    events = ok(d, "GET", "/v1/events?limit=1000")["events"]
    merged = sorted(e["item_id"] for e in events if e["kind"] == "merged")
    assert merged == sorted(i["id"] for i in items)


def test_a_failing_runner_says_so_and_lands_once_the_cause_is_gone(
    repo: Path, daemons: list[Daemon]
) -> None:
    (repo / "blocker").write_text("a file where the landing worktree's root should be\n")
    d = serve(init_board_dir(repo, worktree_root="blocker"))
    daemons.append(d)
    item = submit(d, repo, "add new", {"src/new.py": "N = 1\n"})
    deadline = time.monotonic() + WITHIN
    while (landing := status(d.board_dir)["daemon"]["landing"]).get("state") != "failed":
        assert time.monotonic() < deadline, d.log_path.read_text()
        time.sleep(0.3)
    assert "blocker" in landing["error"] and landing["failures"] >= 1, landing
    said = run_cli("status", board_dir=d.board_dir).stdout
    assert "landing: the daemon's runner FAILED" in said and "blocker" in said, said
    assert "the landing runner failed" in d.log_path.read_text()
    assert state_of(d, item["id"]) == "queued"
    # it failed holding the landing lease: given back, not left to block every runner 60 s
    assert ok(d, "GET", "/v1/landing")["holder"] is None

    (repo / "blocker").unlink()  # the cause gone: its next try lands
    wait_merged(d, item["id"])
    landing = status(d.board_dir)["daemon"]["landing"]
    assert "error" not in landing and landing["landed"] == 1, landing
    assert "landing works again" in d.log_path.read_text()


def _group_running(group: int) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if int(fields[2]) == group and fields[0] != "Z":
                return True
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")
def test_sigterm_mid_check_ends_the_check_gives_the_lease_back_and_leaves_main(
    repo: Path, tmp_path: Path, daemons: list[Daemon]
) -> None:
    started, pids = tmp_path / "check-started", tmp_path / "check-pids"
    check = (
        f"echo $$ >> {pids}; if [ ! -e {started} ]; then touch {started}; "
        "while :; do sleep 0.1; done; fi"
    )
    board_dir = init_board_dir(repo)
    d = serve(board_dir)
    daemons.append(d)
    before = git(repo, "rev-parse", "main")
    item = submit(d, repo, "slow", {"src/slow.py": "S = 1\n"}, checks=[check])
    deadline = time.monotonic() + WITHIN
    while not started.exists():
        assert time.monotonic() < deadline, d.log_path.read_text()
        time.sleep(0.05)
    group = int(pids.read_text().split()[0])
    try:
        assert d.process is not None
        d.process.send_signal(signal.SIGTERM)
        assert d.process.wait(30) == 0, d.log_path.read_text()  # a stop, not a kill
        assert not _group_running(group), "the check outlived the daemon"
    finally:
        if _group_running(group):
            os.killpg(group, signal.SIGKILL)
    board = Board.open(board_dir)
    try:
        assert board.get(item["id"]).state == "queued"
        lease = board.landing.lease()
        assert lease is None or lease.holder is None, lease  # given back, not left to lapse
    finally:
        board.close()
    assert git(repo, "rev-parse", "main") == before

    again = serve(board_dir)  # the next daemon lands it (the check passes this time)
    daemons.append(again)
    wait_merged(again, item["id"])
    assert git(repo, "rev-list", "--count", f"{before}..main") == "1"


# --- the thread itself, in process: a stand-in runner ----------------------------------------


class _Stand:
    """A runner that lands nothing, or fails its pass as told."""

    busy = False
    current = None
    tidier = None  # merged items are tidied nowhere: it merges none
    tidying = False

    def __init__(self, fail: list[Exception]) -> None:
        self.fail = fail

    def land_all(self, *, sweep: bool) -> list[Any]:
        if self.fail:
            raise self.fail.pop()
        return []


def _until(condition: Any, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_failed_pass_is_said_once_shown_and_tried_again() -> None:
    from coord.errors import GitError

    said: list[str] = []
    fail: list[Exception] = [GitError("git broke"), GitError("git broke")]
    lander = in_daemon.InDaemon(
        lambda stop: _Stand(fail),  # type: ignore[arg-type,return-value]
        every=0.01,
        retry_every=0.05,
        log=said.append,
    )
    lander.start()
    try:
        _until(lambda: lander.describe().get("failures") == 2)
        shown = lander.describe()
        assert shown["state"] == "failed" and shown["error"] == "git broke"
        _until(lambda: "error" not in lander.describe())
        assert lander.describe()["state"] == "watching"
    finally:
        assert lander.stop(5)
    assert lander.describe()["state"] == "stopped"
    failed = [line for line in said if "the landing runner failed" in line]
    assert len(failed) == 1 and "git broke" in failed[0]  # said once, not every try
    assert "landing works again" in said


def test_the_runner_is_made_again_when_the_settings_change() -> None:
    made: list[_Stand] = []
    stamp = [1]

    def make(stop: Any) -> Any:
        made.append(_Stand([]))
        return made[-1]

    lander = in_daemon.InDaemon(make, every=0.01, settings_stamp=lambda: stamp[0])
    lander.start()
    try:
        _until(lambda: len(made) == 1 and lander.describe().get("last_pass_at"))
        time.sleep(0.05)
        assert len(made) == 1  # the same settings: the same runner
        stamp[0] = 2
        _until(lambda: len(made) == 2)
    finally:
        assert lander.stop(5)


def test_removals_handed_over_keep_the_daemon_busy_and_stop_waits_for_them() -> None:
    from coord.landing.runner import Landed
    from coord.landing.tidy import Tidier

    let_go = threading.Event()
    tidied: list[Landed] = []

    tidier = Tidier(lambda item: "removed" if let_go.wait(60) else "", tidied.append)

    class _Tidying(_Stand):
        """A runner that merges nothing, its removals handed over by the test."""

        @property
        def tidying(self) -> bool:  # type: ignore[override]
            return tidier.busy

    stand = _Tidying([])
    stand.tidier = tidier
    lander = in_daemon.InDaemon(lambda stop: stand, every=0.01)
    lander.start()
    try:
        _until(lambda: lander.describe().get("last_pass_at"))
        assert not lander.busy
        tidier.later(Landed(7, "7", "merged"), {"id": 7})
        assert lander.busy  # an idle daemon does not exit with a removal under way
        assert not lander.stop(0.2)  # it does not say it stopped while one is
    finally:
        let_go.set()
    assert tidier.drain(60)
    assert not lander.busy
    assert [(t.item, t.cleaned) for t in tidied] == [(7, "removed")]
