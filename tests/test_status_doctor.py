"""`coord status` and `coord doctor`: real CLI processes, a real daemon, real repositories.

Neither command starts a daemon; `doctor` exits 1 on anything that needs fixing and names the
command that fixes it; `--fix` mends what concerns only the board's files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import Daemon, run_cli, stop_leftover_daemon
from coord.fast import board_files
from coord.fast.clients import EVENTS

BIN = str(Path(sys.executable).parent)  # the venv's `coord`, which the wired hooks call


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


def _no_daemon_ran(board_dir: Path) -> bool:
    return (
        not board_files.daemon_record_path(board_dir).exists()
        and not (board_dir / "daemon.log").exists()
    )


# --- coord status -----------------------------------------------------------------------------


def test_status_without_a_daemon_says_so_and_starts_none(board_dir: Path) -> None:
    done = run_cli("status", board_dir=board_dir)
    assert done.returncode == 0, done.stderr
    assert "no daemon running" in done.stdout
    assert str(board_dir) in done.stdout
    document = _json(run_cli("status", "--json", board_dir=board_dir))
    assert document["daemon"]["running"] is False
    assert document["board"]["db_bytes"] > 0
    assert document["board"]["settings"]["default_lease_seconds"] == 900
    assert _no_daemon_ran(board_dir)


def _item(daemon: Daemon, title: str) -> int:
    status, item = daemon.request("POST", "/v1/items", {"agent": "lead", "title": title})
    assert status == 201, item
    return int(item["id"])


def _claim(daemon: Daemon, item_id: int, agent: str, lease: int) -> int:
    status, claim = daemon.request(
        "POST", f"/v1/items/{item_id}/claim", {"agent": agent, "lease_seconds": lease}
    )
    assert status == 200, claim
    return int(claim["token"])


def test_status_counts_by_state_and_lists_what_needs_care(daemon: Daemon) -> None:
    board_dir = daemon.board_dir
    for n in range(3):
        _item(daemon, f"pending {n}")
    soon = _item(daemon, "ends soon")
    _claim(daemon, soon, "alice", 60)
    later = _item(daemon, "ends later")
    _claim(daemon, later, "bob", 3600)
    asked = _item(daemon, "needs an answer")
    token = _claim(daemon, asked, "carol", 600)
    status, _ = daemon.request(
        "POST", f"/v1/items/{asked}/escalate", {"agent": "carol", "token": token, "question": "pg?"}
    )
    assert status == 200
    closed = _item(daemon, "closed")
    status, _ = daemon.request(
        "POST", f"/v1/items/{closed}/cancel", {"agent": "lead", "reason": "not needed"}
    )
    assert status == 200

    document = _json(run_cli("status", "--json", board_dir=board_dir))
    assert document["daemon"]["running"] and document["daemon"]["answering"]
    assert document["daemon"]["pid"] == daemon.process.pid  # type: ignore[union-attr]
    assert document["daemon"]["versions_agree"] is True
    assert document["daemon"]["uptime_seconds"] >= 0
    board = document["board"]
    assert board["counts"] == {
        "pending": 3,
        "needs_rework": 0,
        "claimed": 2,
        "needs_human": 1,
        "queued": 0,
        "done": 0,
        "merged": 0,
        "cancelled": 1,
    }
    assert board["total"] == 7
    assert [c["id"] for c in board["near_expiry"]] == [soon]
    assert board["near_expiry"][0]["holder"] == "alice"
    assert board["lapsed"] == []
    assert [(i["id"], i["question"]) for i in board["needs_human"]] == [(asked, "pg?")]
    active = {a["name"] for a in board["active_agents"]}
    assert {"alice", "bob", "carol"} <= active

    text = run_cli("status", board_dir=board_dir).stdout
    assert f"pid {daemon.process.pid}" in text  # type: ignore[union-attr]
    assert (
        "7 (3 pending, 0 needs_rework, 2 claimed, 1 needs_human, 0 queued, 0 done, 0 merged, "
        "1 cancelled)"
    ) in text
    assert f"#{soon} alice, lease ends in" in text
    assert f"#{later} " not in text
    assert f"#{asked} carol asks: pg?" in text


def test_the_status_endpoint_needs_the_boards_token(daemon: Daemon) -> None:
    status, answer = daemon.request("GET", "/v1/status", token=None)
    assert status == 401, answer
    status, answer = daemon.request("GET", "/v1/status")
    assert status == 200 and answer["board"]["total"] == 0


def test_status_names_the_sqlite_board_and_its_one_daemon(daemon: Daemon) -> None:
    status, answer = daemon.request("GET", "/v1/status")
    assert status == 200
    assert answer["storage"] == {
        "backend": "sqlite",
        "path": str(daemon.board_dir.resolve() / "board.db"),
    }
    assert [(d["pid"], d["this"]) for d in answer["daemons"]] == [(daemon.process.pid, True)]  # type: ignore[union-attr]
    document = _json(run_cli("status", "--json", board_dir=daemon.board_dir))
    assert document["daemon"]["others"] == []
    assert "storage:" not in run_cli("status", board_dir=daemon.board_dir).stdout


# --- coord doctor -----------------------------------------------------------------------------


@pytest.fixture
def wired(tmp_path: Path) -> Any:
    """A git repository with `coord init --all`, coord on PATH, a HOME of its own."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": BIN + os.pathsep + os.environ["PATH"]}
    env.pop("CODEX_HOME", None)
    board_dir = repo / ".coord"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        extra = {**env, "CODEX_HOME": str(home / ".codex")}
        return run_cli(*args, board_dir=board_dir, env=extra, cwd=repo)

    done = cli("init", "--all")
    assert done.returncode == 0, done.stderr
    yield repo, board_dir, home, cli
    stop_leftover_daemon(board_dir)


def _findings(done: subprocess.CompletedProcess[str], status: str) -> dict[str, dict[str, Any]]:
    document = _json(done)
    return {f["check"]: f for f in document["findings"] if f["status"] == status}


def test_doctor_on_a_healthy_wired_repository_exits_0(wired: Any) -> None:
    _repo, board_dir, _home, cli = wired
    done = cli("doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all well" in done.stdout
    assert "FIX" not in done.stdout
    document = _json(cli("doctor", "--json"))
    assert document["ok"] is True
    checked = {f["check"] for f in document["findings"]}
    assert {"config", "board", "modes", "daemon", "sessions", "wiring", "commands"} <= checked
    assert _no_daemon_ran(board_dir)  # doctor starts no daemon either


def test_doctor_finds_a_hook_command_that_does_not_resolve(wired: Any) -> None:
    _repo, _board_dir, _home, cli = wired
    assert cli("init", "--all", "--command", "/nowhere/bin/coord").returncode == 0
    done = cli("doctor", "--json")
    assert done.returncode == 1
    commands = _findings(done, "fix")["commands"]
    assert "`/nowhere/bin/coord`" in commands["message"]
    assert ".claude/settings.json" in commands["message"]
    assert "--command /path/to/coord" in commands["fix"]


def test_doctor_finds_a_board_others_may_read_and_fix_mends_it(wired: Any) -> None:
    _repo, board_dir, _home, cli = wired
    db = board_files.db_path(board_dir)
    db.chmod(0o644)
    done = cli("doctor", "--json")
    assert done.returncode == 1
    modes = _findings(done, "fix")["modes"]
    assert "board.db (0644)" in modes["message"]
    assert modes["fix"].startswith(f"chmod -R go-rwx {board_dir}")
    fixed = cli("doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout
    assert db.stat().st_mode & 0o777 == 0o600


def test_doctor_finds_a_bad_setting(wired: Any) -> None:
    _repo, board_dir, _home, cli = wired
    (board_dir / "config.json").write_text('{"colour": 1}')
    done = cli("doctor", "--json")
    assert done.returncode == 1
    config = _findings(done, "fix")["config"]
    assert "'colour'" in config["message"]
    assert "config.json" in config["fix"]


def test_doctor_finds_a_missing_pre_commit_guard(wired: Any) -> None:
    repo, _board_dir, _home, cli = wired
    (repo / ".git" / "hooks" / "pre-commit").unlink()
    done = cli("doctor", "--json")
    assert done.returncode == 1
    guard = _findings(done, "fix")["wiring .git/hooks/pre-commit"]
    assert "pre-commit guard is not in place" in guard["message"]
    assert guard["fix"] == "coord init --all"
    assert cli(*guard["fix"].split()[1:]).returncode == 0  # the fix given fixes it
    assert cli("doctor").returncode == 0


def test_doctor_finds_a_pre_commit_guard_git_would_skip(wired: Any) -> None:
    repo, _board_dir, _home, cli = wired
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.chmod(0o644)
    done = cli("doctor", "--json")
    assert done.returncode == 1
    guard = _findings(done, "fix")["pre-commit guard"]
    assert "not executable" in guard["message"]
    assert guard["fix"] == f"chmod +x {hook}"


def test_doctor_finds_stale_claim_tokens_and_dead_sessions(wired: Any) -> None:
    _repo, board_dir, _home, cli = wired
    daemon = Daemon(board_dir).start()
    try:
        held = _item(daemon, "held")
        token = _claim(daemon, held, "alice", 600)
        released = _item(daemon, "released")
        claims = board_files.claims_dir(board_dir)
        claims.mkdir(mode=0o700, exist_ok=True)
        remembered = {str(held): token, str(released): 1, "99": 4}
        (claims / "alice.json").write_text(json.dumps(remembered))
        (claims / "alice.json").chmod(0o600)
        ended = subprocess.Popen(["true"])
        ended.wait()
        sessions = board_files.sessions_dir(board_dir)
        sessions.mkdir(mode=0o700, exist_ok=True)
        record = sessions / f"{ended.pid}.json"
        record.write_text('{"agent": "claude-x"}')
        record.chmod(0o600)

        done = cli("doctor", "--json")
        assert done.returncode == 1
        to_fix = _findings(done, "fix")
        stale = to_fix["claim tokens"]["message"]
        assert f"{released} (alice)" in stale and "99 (alice)" in stale
        assert f"{held} (alice)" not in stale
        assert to_fix["claim tokens"]["fix"] == "coord doctor --fix"
        assert f"{ended.pid}.json" in to_fix["sessions"]["message"]

        assert cli("doctor", "--fix").returncode == 0
        assert json.loads((claims / "alice.json").read_text()) == {str(held): token}
        assert not record.exists()
    finally:
        daemon.stop()


# --- trust, read from the clients' own files ----------------------------------------------------


def _trust(root: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    from coord.wiring import checks

    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    found = checks.trust_findings(root, ["claude", "codex", "gemini"])
    return {f["check"]: f["status"] for f in found}


def test_trust_is_read_where_the_clients_keep_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    nothing = dict.fromkeys(("trust claude", "trust codex", "trust gemini"), "unknown")
    assert _trust(root, home, monkeypatch) == nothing

    (home / ".claude.json").write_text(
        json.dumps({"projects": {str(root): {"enabledMcpjsonServers": ["coord"]}}})
    )
    (home / ".gemini").mkdir()
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(tmp_path): "TRUST_FOLDER", str(root): "DO_NOT_TRUST"})
    )
    (home / ".codex").mkdir()
    codex_config = home / ".codex" / "config.toml"
    codex_config.write_text(f'[projects.{json.dumps(str(root))}]\ntrust_level = "trusted"\n')
    assert _trust(root, home, monkeypatch) == {
        "trust claude": "ok",
        "trust codex": "fix",  # the folder is trusted, coord's hooks are not
        "trust gemini": "fix",  # the nearer rule refuses
    }

    hooks = root / ".codex" / "hooks.json"
    with codex_config.open("a") as config:
        for event in EVENTS["codex"]:  # every hook coord wires, the after-tool check's too
            key = json.dumps(f"{hooks}:{event.lower()}:0:0")
            config.write(f'[hooks.state.{key}]\ntrusted_hash = "sha256:00"\n')
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(root / "inner"): "TRUST_PARENT"})
    )
    assert _trust(root, home, monkeypatch) == dict.fromkeys(nothing, "ok")
