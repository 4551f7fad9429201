"""The real `coord` command as a subprocess, talking to a real daemon."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Daemon, run_cli


def cli_json(*args: str, board_dir: Path, agent: str | None = None) -> tuple[int, dict]:
    result = run_cli(*args, "--json", board_dir=board_dir, agent=agent)
    assert "Traceback" not in result.stderr
    return result.returncode, json.loads(result.stdout)


def test_add_claim_conflict_done_through_the_cli(daemon: Daemon) -> None:
    bd = daemon.board_dir
    code, added = cli_json(
        "add", "Fix login", "--kind", "bug", "--priority", "1", "--label", "auth", board_dir=bd
    )
    assert code == 0 and added["id"] == 1 and added["labels"] == ["auth"]

    code, won = cli_json("claim", "1", board_dir=bd, agent="a")
    assert code == 0 and won["token"] == 1 and won["agent"] == "a"

    lost = run_cli("claim", "1", board_dir=bd, agent="b")
    assert lost.returncode == 3
    assert "claimed by a until" in lost.stderr and "Traceback" not in lost.stderr
    code, err = cli_json("claim", "1", board_dir=bd, agent="b")
    assert code == 3 and err["error"] == "already_claimed" and err["holder"] == "a"

    # the CLI remembered a's token: done needs no --token
    done = run_cli("done", "1", "--as", "a", board_dir=bd)
    assert done.returncode == 0, done.stderr
    code, shown = cli_json("show", "1", board_dir=bd)
    assert shown["state"] == "done" and shown["claimed_by"] == "a"


def test_next_exit_codes_and_json_shape(daemon: Daemon) -> None:
    bd = daemon.board_dir
    code, err = cli_json("next", board_dir=bd, agent="a")
    assert code == 4 and err["error"] == "nothing_ready"
    run_cli("add", "only one", board_dir=bd)
    code, won = cli_json("next", board_dir=bd, agent="a")
    assert code == 0
    assert {"id", "token", "lease_expires_at", "agent", "item"} <= won.keys()
    assert run_cli("next", board_dir=bd, agent="b").returncode == 4


# What an agent's every `coord next` must not pay for: the daemon's stack, the database,
# and stdlib modules argparse and getaddrinfo would pull in (shutil with bz2/lzma/zlib for the
# help width, the idna codec for a str host), argparse itself with gettext (`coord next` reads
# its options by hand) and the socket module's wrapper (its enums): ~10 ms of a ~35 ms call
# (bench/, figure 3).
NOT_ON_THE_CLAIM_PATH = (
    "starlette",
    "uvicorn",
    "orjson",
    "mcp",
    "sqlite3",
    "asyncio",
    "shutil",
    "argparse",
    "gettext",
    "socket",
)
# coord's own modules `coord next` may load: the command line, the client half of the protocol,
# the fast path and the nouns. Not the core, storage, the server, spec, git mode or wiring.
CLAIM_PATH_LAYERS = ("coord.cli", "coord.client", "coord.fast")
NOUNS = ("coord", "coord.__main__", "coord.model", "coord.errors", "coord.times", "coord.limits")


def test_next_imports_nothing_it_does_not_need(daemon: Daemon) -> None:
    run_cli("add", "ready", board_dir=daemon.board_dir, agent="h")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "coord", "next", "--json"],
        env={**os.environ, "COORD_DIR": str(daemon.board_dir), "COORD_AGENT": "a"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and json.loads(result.stdout)["title"] == "ready"
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "coord.client.http" in imported  # the listing is what it claims to be
    heavy = {m for m in imported if m.split(".")[0] in NOT_ON_THE_CLAIM_PATH}
    assert not heavy and "encodings.idna" not in imported, sorted(heavy)
    ours = {m for m in imported if m == "coord" or m.startswith("coord.")}
    outside = {
        m
        for m in ours
        if m not in NOUNS and not any(m == k or m.startswith(k + ".") for k in CLAIM_PATH_LAYERS)
    }
    assert not outside, sorted(outside)
    assert not {"coord.cli.main", "coord.cli.parser"} & ours  # no parser was built


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--json"],
        ["--as", "a"],
        ["--as=a", "--json"],
        ["--kind", "bug"],
        ["--kind=note", "--label", "ui"],
        ["--lease", "60"],
        ["--count", "3"],
        ["--lease=1.5", "--count=2", "--json", "--as", "b", "--label=x"],
    ],
)
def test_next_read_without_argparse_as_argparse_reads_it(argv: list[str]) -> None:
    """`coord next` skips argparse (it costs more than the claim); what it reads must be what
    the parser would have given."""
    from coord.cli.entry import next_options
    from coord.cli.main import build_parser

    fast = next_options(argv)
    full = build_parser("next").parse_args(["next", *argv])
    assert fast is not None
    assert vars(fast) == {k: v for k, v in vars(full).items() if k != "func"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--kind", "bogus"],
        ["--lease", "0"],
        ["--lease", "-5"],
        ["--count", "999"],
        ["--as"],
        ["--lab", "x"],  # argparse's abbreviation of --label
        ["--help"],
        ["stray"],
    ],
)
def test_next_leaves_what_it_cannot_read_to_argparse(argv: list[str]) -> None:
    from coord.cli.entry import next_options

    assert next_options(argv) is None


def test_next_with_a_bad_option_is_a_usage_error(daemon: Daemon) -> None:
    result = run_cli("next", "--kind", "bogus", board_dir=daemon.board_dir, agent="a")
    assert result.returncode == 2 and "invalid choice: 'bogus'" in result.stderr
    result = run_cli("next", "--count", "0", board_dir=daemon.board_dir, agent="a")
    assert result.returncode == 2 and "count is 1 to 200" in result.stderr


def test_json_flag_works_before_the_command_too(daemon: Daemon) -> None:
    run_cli("add", "x", board_dir=daemon.board_dir)
    result = run_cli("--json", "ls", board_dir=daemon.board_dir)
    assert result.returncode == 0
    assert [i["title"] for i in json.loads(result.stdout)["items"]] == ["x"]


def test_stale_token_is_refused_with_exit_3(daemon: Daemon) -> None:
    bd = daemon.board_dir
    run_cli("add", "x", board_dir=bd)
    run_cli("claim", "1", "--lease", "1", board_dir=bd, agent="a")
    daemon.request("POST", "/v1/items/1/release", {"agent": "a", "token": 1})
    daemon.request("POST", "/v1/items/1/claim", {"agent": "b"})
    result = run_cli("heartbeat", "1", board_dir=bd, agent="a")
    assert result.returncode == 3
    assert "held by b" in result.stderr
    assert daemon.request("GET", "/v1/items/1")[1]["claimed_by"] == "b"


def test_failing_checks_tell_the_cli_user_its_flags(daemon: Daemon, tmp_path: Path) -> None:
    """The board words the refusal for every face (HTTP and MCP have no flags); the CLI adds
    its own flags, chosen by the error's code."""
    bd = daemon.board_dir
    run_cli("add", "x", "--check", "exit 7", board_dir=bd)
    run_cli("claim", "1", board_dir=bd, agent="a")
    refused = run_cli("done", "1", board_dir=bd, agent="a", cwd=tmp_path)
    assert refused.returncode == 3, refused.stderr
    hint = "coord: fix it and run `coord done 1` again (it runs the checks here), or close it"
    assert hint in refused.stderr and "`coord done 1 --skip-checks --reason TEXT`" in refused.stderr
    code, err = cli_json("done", "1", board_dir=bd, agent="a")
    assert code == 3 and err["error"] == "checks_failed"
    assert "coord done 1 --skip-checks --reason TEXT" in err["hint"]
    closed = run_cli("done", "1", "--skip-checks", "--reason", "by hand", board_dir=bd, agent="a")
    assert closed.returncode == 0, closed.stderr


def test_missing_identity_and_missing_token_are_usage_errors(daemon: Daemon) -> None:
    bd = daemon.board_dir
    run_cli("add", "x", board_dir=bd)
    no_agent = run_cli("claim", "1", board_dir=bd)
    assert no_agent.returncode == 2 and "--as NAME" in no_agent.stderr
    unclaimed = run_cli("done", "1", board_dir=bd, agent="a")
    assert unclaimed.returncode == 3 and "not claimed: claim it first" in unclaimed.stderr
    assert run_cli("claim", "1", board_dir=bd, agent="a").returncode == 0
    for remembered in (bd / "claims").iterdir():  # the token this machine kept is lost
        remembered.unlink()
    no_token = run_cli("done", "1", board_dir=bd, agent="a")
    assert no_token.returncode == 2 and "--token" in no_token.stderr


@pytest.mark.parametrize(
    "args",
    [["add", "x", "--priority", "9"], ["claim", "1x"], ["ls", "--state", "lost"], ["frobnicate"]],
)
def test_argument_errors_exit_2(daemon: Daemon, args: list[str]) -> None:
    result = run_cli(*args, board_dir=daemon.board_dir, agent="a")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stderr.strip()


def test_import_json_lines_and_refuse_bad_lines_whole(daemon: Daemon, tmp_path: Path) -> None:
    bd = daemon.board_dir
    good = tmp_path / "items.jsonl"
    good.write_text('{"title": "a", "ref": "a"}\n\n{"title": "b", "deps": ["a"], "priority": 0}\n')
    code, result = cli_json("import", str(good), board_dir=bd)
    assert code == 0 and result == {"ids": [1, 2]}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"title": "c"}\n{"title": \n')
    result2 = run_cli("import", str(bad), board_dir=bd)
    assert result2.returncode == 2 and "bad.jsonl:2" in result2.stderr
    assert len(daemon.request("GET", "/v1/items")[1]["items"]) == 2


def test_reply_inbox_agents_and_log(daemon: Daemon) -> None:
    bd = daemon.board_dir
    run_cli("add", "mine", board_dir=bd, agent="me")
    run_cli("reply", "1", "please", "look", "@me", board_dir=bd, agent="you")
    code, inbox = cli_json("inbox", board_dir=bd, agent="me")
    assert code == 0
    assert [e["kind"] for e in inbox["events"]] == ["reply"]
    assert cli_json("inbox", board_dir=bd, agent="me")[1]["events"] == []
    _code, agents = cli_json("agents", board_dir=bd)
    assert {a["name"] for a in agents["agents"]} == {"me"}  # you only replied: a person
    _code, everyone = cli_json("agents", "--all", board_dir=bd)
    assert {a["name"] for a in everyone["agents"]} == {"me", "you"}
    log = run_cli("log", board_dir=bd)
    assert log.returncode == 0
    assert "created #1" in log.stdout and "reply #1" in log.stdout


def test_log_follow_streams_new_events(daemon: Daemon) -> None:
    env = {**os.environ, "COORD_DIR": str(daemon.board_dir)}
    follower = subprocess.Popen(
        [sys.executable, "-m", "coord", "log", "--follow", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        run_cli("add", "streamed", board_dir=daemon.board_dir)
        assert follower.stdout is not None
        event = json.loads(follower.stdout.readline())
        assert event["kind"] == "created" and event["details"]["title"] == "streamed"
    finally:
        follower.kill()
        follower.communicate()


def test_no_board_is_a_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "coord", "ls"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "COORD_DIR"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    assert "coord init" in result.stderr and "Traceback" not in result.stderr


def test_init_at_git_root_is_idempotent_and_keeps_the_token_private(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "src" / "deep"
    sub.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "COORD_DIR"}

    def init() -> dict:
        r = subprocess.run(
            [sys.executable, "-m", "coord", "init", "--json"],
            cwd=sub,
            env=env,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    first, second = init(), init()
    assert first["board"] == str(tmp_path / ".coord") and first["created"] is True
    assert second["created"] is False
    token = tmp_path / ".coord" / "token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert (tmp_path / ".coord" / ".gitignore").read_text() == "*\n"


def test_help_lists_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "coord", "--help"], capture_output=True, text=True
    )
    from coord.cli.main import COMMANDS

    assert len(COMMANDS) >= 24
    for command in COMMANDS:
        assert f"    {command}" in result.stdout, command


def test_escalate_says_the_day_its_hold_ends(daemon: Daemon) -> None:
    """The bound is days away: a time of day alone ("until 14:46:14Z") reads as today."""
    bd = daemon.board_dir
    assert run_cli("add", "t", board_dir=bd, agent="a").returncode == 0
    assert run_cli("claim", "1", board_dir=bd, agent="a").returncode == 0
    said = run_cli("escalate", "1", "which flow?", board_dir=bd, agent="a")
    assert said.returncode == 0, said.stderr
    shown = json.loads(run_cli("show", "1", "--json", board_dir=bd).stdout)
    day, clock = shown["lease_expires_at"][:10], shown["lease_expires_at"][11:19]
    assert f"at most until {day} {clock}Z" in said.stdout, said.stdout
