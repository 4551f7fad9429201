"""`coord watch` in a real terminal: tmux runs it at 80×24, the test sends keys and reads the
pane, while other processes change the board through a real daemon. Nothing here times
anything: each wait polls the pane until what it expects is shown, with a generous limit.

The frame's layout (fits the size it is given, counts leases down on the board's clock) is
also checked as a pure function, without a terminal.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Daemon, run_cli
from coord.cli import watch_view
from coord.cli.watch_board import Snapshot
from coord.fast import identity
from coord.times import iso

WAIT_SECONDS = 60.0  # a loaded two-core machine: generous, never a timing assertion
ESCAPE_TITLE = "evil \x1b]0;pwned\x07 title"


class Terminal:
    """A tmux server of its own (its own socket, no config) running one command in an
    ``width``×``height`` pane. The command's exit code and whether it left the terminal's
    settings as it found them (``stty -g`` before and after) are printed after it ends."""

    def __init__(self, board_dir: Path, args: str, width: int = 80, height: int = 24) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="cw"))  # a socket path must stay short
        self.socket = str(self.dir / "s")
        # the shell outlives a Ctrl-C to report: a trap (not an ignore, which `coord` would
        # inherit) lets it see its command end
        command = (
            "trap : INT; before=$(stty -g); "
            f"{shlex.quote(sys.executable)} -m coord watch {args}; rc=$?; "
            'if [ "$before" = "$(stty -g)" ]; then echo tty-restored; fi; '
            "echo exit=$rc; sleep 600"
        )
        self.tmux(
            "new-session", "-d", "-x", str(width), "-y", str(height), "-s", "w",
            "-e", f"COORD_DIR={board_dir}", "-e", "LANG=C.UTF-8", "-e", "LC_ALL=C.UTF-8",
            f"sh -c {shlex.quote(command)}",
        )  # fmt: skip

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def screen(self) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", "w").split("\n")[:-1]

    def wait_for(self, pattern: str, gone: bool = False) -> list[str]:
        """The screen once ``pattern`` (a regular expression) shows on it (or, ``gone``, no
        longer does)."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            screen = self.screen()
            if bool(re.search(pattern, "\n".join(screen))) != gone:
                return screen
            if time.monotonic() > deadline:
                shown = "\n".join(screen)
                pytest.fail(f"{pattern!r} {'still' if gone else 'never'} shown:\n{shown}")
            time.sleep(0.1)

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "w", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def terminal() -> Iterator[type[Terminal]]:
    if shutil.which("tmux") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is not installed: CI must run coord watch in a real terminal")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    opened: list[Terminal] = []

    class Opened(Terminal):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            opened.append(self)

    yield Opened
    for term in opened:
        term.close()


def seed(board_dir: Path) -> None:
    for title in ("Fix login flow", "Write the docs", ESCAPE_TITLE):
        assert run_cli("add", title, board_dir=board_dir).returncode == 0


def test_the_live_board_in_80x24_claims_questions_and_escaped_titles(
    daemon: Daemon, terminal: type[Terminal]
) -> None:
    seed(daemon.board_dir)
    term = terminal(daemon.board_dir, "")
    screen = term.wait_for("Fix login flow")
    assert len(screen) == 24 and screen[0].startswith("coord watch")
    assert "3 pending" in screen[0] and "q quit" in screen[-1]
    assert all(len(line) < 80 for line in screen)
    # the title's escape sequence is shown as text, not obeyed (it would retitle the pane)
    assert any(r"evil \x1b]0;pwned\x07 title" in line for line in screen)
    assert "pwned" not in term.tmux("display-message", "-p", "-t", "w", "#{pane_title}")

    # another process claims: the claim shows with its agent and a countdown, no key pressed
    claim = run_cli("claim", "1", "--lease", "600", board_dir=daemon.board_dir, agent="agent-7")
    assert claim.returncode == 0, claim.stderr
    screen = term.wait_for(r"#1 +agent-7 +\d+m\d\ds hb +\d+s Fix login flow")
    countdown = re.search(r"agent-7 +(\d+)m(\d\d)s", "\n".join(screen))
    assert countdown is not None
    assert 0 < int(countdown[1]) * 60 + int(countdown[2]) <= 600

    asked = run_cli(
        "escalate", "1", "which OAuth provider?", board_dir=daemon.board_dir, agent="agent-7"
    )
    assert asked.returncode == 0, asked.stderr
    term.wait_for(r"Needs human 1\n#1 +agent-7 +asks: which OAuth provider\?")
    term.wait_for(r"agent-7 escalated #1")  # the activity feed


def test_a_resize_redraws_at_the_new_size(daemon: Daemon, terminal: type[Terminal]) -> None:
    long_title = "A title long enough to be cut at eighty columns but whole at a hundred"
    assert run_cli("add", long_title, board_dir=daemon.board_dir).returncode == 0
    term = terminal(daemon.board_dir, "")
    screen = term.wait_for("A title long enough")
    assert long_title not in "\n".join(screen) and "…" in "\n".join(screen)
    term.tmux("resize-window", "-t", "w", "-x", "100", "-y", "30")
    screen = term.wait_for(re.escape(long_title))
    assert len(screen) == 30 and "q quit" in screen[-1]


def test_it_keeps_going_across_a_daemon_restart(board_dir: Path, terminal: type[Terminal]) -> None:
    first = Daemon(board_dir).start()
    try:
        assert run_cli("add", "before the restart", board_dir=board_dir).returncode == 0
        term = terminal(board_dir, "")
        term.wait_for("before the restart")
    finally:
        first.stop()
    term.wait_for("reconnecting…")
    second = Daemon(board_dir).start()
    try:
        assert run_cli("add", "after the restart", board_dir=board_dir).returncode == 0
        me = re.escape(identity.person())  # the CLI acts as the person at the terminal
        screen = term.wait_for(rf"{me} created #2 'after the restart'")
        term.wait_for("reconnecting", gone=True)
        assert "before the restart" in "\n".join(screen)
        assert "exit=" not in "\n".join(term.screen())
    finally:
        second.stop()


@pytest.mark.parametrize(("key", "code"), [("q", 0), ("C-c", 130), ("SIGTERM", 143)])
def test_q_ctrl_c_and_kill_end_it_with_the_terminal_restored(
    daemon: Daemon, terminal: type[Terminal], key: str, code: int
) -> None:
    seed(daemon.board_dir)
    term = terminal(daemon.board_dir, "")
    term.wait_for("Fix login flow")
    if key == "SIGTERM":
        shell = term.tmux("display-message", "-p", "-t", "w", "#{pane_pid}").strip()
        [watch] = subprocess.run(
            ["pgrep", "-P", shell], capture_output=True, text=True, check=True
        ).stdout.split()
        os.kill(int(watch), signal.SIGTERM)
    else:
        term.keys(key)
    screen = "\n".join(term.wait_for(r"exit=\d+"))
    assert f"exit={code}" in screen
    assert "tty-restored" in screen  # echo, canonical mode, ... as before it ran
    assert "Fix login flow" not in screen  # the board was on the alternate screen, now gone
    assert term.tmux("display-message", "-p", "-t", "w", "#{alternate_on}").strip() == "0"
    assert "Traceback" not in screen


def test_keys_cycle_the_panes_and_the_agent_filter(
    daemon: Daemon, terminal: type[Terminal]
) -> None:
    seed(daemon.board_dir)
    for number, agent in (("1", "agent-a"), ("2", "agent-b")):
        assert run_cli("claim", number, board_dir=daemon.board_dir, agent=agent).returncode == 0
    term = terminal(daemon.board_dir, "")
    term.wait_for("agent-b")
    term.keys("f")  # the first agent only
    screen = "\n".join(term.wait_for("f agent: agent-a"))
    assert "Claimed 2 (showing agent-a's)" in screen and "agent-b " not in screen
    # on through every agent on the board (those who added items too), then everyone again
    shown = ["agent-a"]
    while shown[-1] != "all" and len(shown) < 10:
        term.keys("f")
        deadline = time.monotonic() + WAIT_SECONDS
        while (now := _footer_agent(term)) == shown[-1] and time.monotonic() < deadline:
            time.sleep(0.1)
        shown.append(now)
    assert shown[:2] == ["agent-a", "agent-b"] and shown[-1] == "all", shown
    term.keys("Tab")  # Claimed alone
    screen = "\n".join(term.wait_for("Tab pane: claimed"))
    assert "Activity" not in screen and "agent-a" in screen and "agent-b" in screen
    term.keys("r")  # a refresh is not an exit
    term.wait_for("Tab pane: claimed")
    assert "exit=" not in "\n".join(term.screen())


def _footer_agent(term: Terminal) -> str:
    found = re.search(r"f agent: (\S+)", term.screen()[-1])
    return found[1] if found else ""


def test_once_prints_one_frame_on_a_pipe_and_json_one_snapshot(daemon: Daemon) -> None:
    seed(daemon.board_dir)
    run_cli("claim", "1", board_dir=daemon.board_dir, agent="agent-7")
    once = run_cli("watch", "--once", board_dir=daemon.board_dir)
    assert once.returncode == 0, once.stderr
    assert "\x1b" not in once.stdout and r"evil \x1b]0;pwned\x07 title" in once.stdout
    assert re.search(r"Claimed 1\n#1 +agent-7 +\d+m\d\ds hb", once.stdout)
    assert re.search(r"Ready 2 of 2 pending", once.stdout)

    document = json.loads(run_cli("watch", "--json", board_dir=daemon.board_dir).stdout)
    assert document["counts"]["claimed"] == 1
    [claim] = document["claimed"]
    assert claim["holder"] == "agent-7" and 0 < claim["seconds_left"] <= 900
    assert [item["title"] for item in document["ready"]] == ["Write the docs", ESCAPE_TITLE]

    # --agent narrows the JSON as it narrows the frame (it was ignored: everyone's claims,
    # files and events)
    run_cli("reserve", "other.py", board_dir=daemon.board_dir, agent="agent-9")
    mine = run_cli("watch", "--json", "--agent", "agent-9", board_dir=daemon.board_dir)
    narrowed = json.loads(mine.stdout)
    assert narrowed["claimed"] == [] and narrowed["counts"]["claimed"] == 1
    assert [r["agent"] for r in narrowed["reservations"]] == ["agent-9"]
    assert {e["agent"] for e in narrowed["events"]} == {"agent-9"}
    assert len(narrowed["ready"]) == 2  # ready work is everyone's, as in the frame

    # no terminal: curses is refused, and the message says what to use instead
    refused = run_cli("watch", board_dir=daemon.board_dir)
    assert refused.returncode == 2 and "--once" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_the_command_line_loads_neither_curses_nor_the_watch() -> None:
    code = (
        "import sys, coord.cli.main; "
        "print(sorted(m for m in sys.modules if 'curses' in m or 'watch' in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


# --- the frame, without a terminal -----------------------------------------------------------


def _snapshot(server_now: float, count: int) -> Snapshot:
    def item(number: int, **fields: object) -> dict[str, object]:
        return {
            "id": number,
            "key": None,
            "title": f"item {number} " + "漢字 wide title " * 4,
            "priority": 2,
            "claimed_by": None,
            "lease_expires_at": None,
            "question": None,
            "escalate_to": None,
            "ready": True,
            "blocked_by": [],
            "files_held_by": [],
            "reserved_for": None,
            **fields,
        }

    lease = iso(server_now + 300)
    return Snapshot(
        server_now=server_now,
        read_at=time.monotonic(),
        last_seq=count,
        counts={"pending": count, "claimed": count, "needs_human": count, "done": 0},
        claimed=[item(n, claimed_by=f"agent-{n}", lease_expires_at=lease) for n in range(count)],
        needs_human=[item(n, claimed_by="agent-1", question="why?") for n in range(count)],
        ready=[item(n, ready=n % 2 == 0, blocked_by=[1]) for n in range(count)],
        ready_count=str(count),
        reservations=[
            {
                "agent": "agent-1",
                "pattern": f"src/{n}/**",
                "exclusive": True,
                "item": n,
                "expires_at": lease,
            }
            for n in range(count)
        ],
        agents=[
            {"name": f"agent-{n}", "last_seen": iso(server_now - 10), "active": True}
            for n in range(count)
        ],
        events=[
            {
                "seq": n,
                "at": iso(server_now),
                "agent": "agent-1",
                "item_id": n,
                "kind": "created",
                "details": {"title": f"t{n}"},
            }
            for n in range(count)
        ],
    )


@pytest.mark.parametrize(
    ("width", "height"), [(80, 24), (100, 30), (20, 5), (40, 3), (30, 2), (10, 1)]
)
def test_a_full_board_fits_the_screen_it_is_given(width: int, height: int) -> None:
    snapshot = _snapshot(time.time(), 60)
    lines = watch_view.frame(snapshot, snapshot.events, width=width, height=height)
    assert len(lines) == height
    for line in lines:
        assert watch_view.width_of("".join(text for text, _ in line)) < width
    shown = "\n".join("".join(text for text, _ in line) for line in lines)
    if height == 24:
        for heading in ("Claimed 60", "Needs human 60", "Ready 60", "Held files 60", "Activity"):
            assert heading in shown
        assert shown.count("more") == 5  # every section cut says so


def test_leases_count_down_on_the_board_clock_not_this_machines() -> None:
    # the board's clock is a year behind this machine's: a lease with five minutes left on it
    # is shown with five minutes left, not as lapsed long ago
    snapshot = _snapshot(time.time() - 365 * 86400, 1)
    shown = "\n".join(
        "".join(text for text, _ in line)
        for line in watch_view.frame(snapshot, [], width=80, height=None)
    )
    assert re.search(r"#0 +agent-0 +4m5\ds hb +1\ds", shown), shown
    assert "lapsed" not in shown
