"""Each refusal of the HTTP face is its own error class, and reaches the CLI as that class."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import Daemon, run_cli
from coord.errors import (
    ERRORS_BY_CODE,
    EXIT_USAGE,
    ForeignHost,
    InvalidJson,
    Unauthorized,
    error_from_dict,
)


def test_the_wire_codes_of_the_pipeline_rebuild_their_classes() -> None:
    for cls, status in ((InvalidJson, 400), (ForeignHost, 403)):
        sent = cls("a message naming the problem")
        assert sent.http_status == status
        rebuilt = error_from_dict(json.loads(json.dumps(sent.to_dict())))
        assert type(rebuilt) is cls and rebuilt.message == sent.message
    assert error_from_dict({"error": "invalid_json", "message": "x"}).exit_code == EXIT_USAGE
    assert ERRORS_BY_CODE["unauthorized"] is Unauthorized  # a foreign host is not a 401


def test_the_daemons_invalid_json_answer_exits_2_from_the_cli(
    daemon: Daemon, board_dir: Path, tmp_path: Path
) -> None:
    """``coord import`` reads each line with Python's json, which takes NaN, and sends it on;
    JSON has no NaN, so the daemon answers 400 invalid_json. The README promises exit 2 for
    invalid input (it was 1: the code came back as a plain CoordError)."""
    lines = tmp_path / "items.jsonl"
    lines.write_text('{"title": "fine"}\n{"title": "odd", "priority": NaN}\n', encoding="utf-8")
    done = run_cli("import", str(lines), "--json", board_dir=board_dir, agent="h")
    assert done.returncode == 2, (done.stdout, done.stderr)
    answer = json.loads(done.stdout)
    assert answer["error"] == "invalid_json" and "NaN" in answer["message"]
    assert daemon.request("GET", "/v1/items")[1]["items"] == []  # nothing was imported
    shown = run_cli("import", str(lines), board_dir=board_dir, agent="h")
    assert shown.returncode == 2 and "not valid JSON" in shown.stderr
    assert "Traceback" not in shown.stderr


def _log_hint(board_dir: Path, stderr: Any) -> str:
    code = (
        "import sys; from pathlib import Path; from coord.server.app import where_the_log_is; "
        f"print(where_the_log_is(Path({str(board_dir)!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=stderr, text=True, check=True
    )
    return done.stdout.strip()


def test_a_500_names_the_log_the_daemon_really_writes(tmp_path: Path) -> None:
    """The message of a 500 sent everyone to .coord/daemon.log, which a `coord serve` daemon
    does not write (its log is its standard error); it does when the CLI started it."""
    board_dir = tmp_path / ".coord"
    board_dir.mkdir()
    log = board_dir / "daemon.log"
    with log.open("a") as started_by_the_cli:
        assert _log_hint(board_dir, started_by_the_cli) == str(log)
    served = _log_hint(board_dir, subprocess.PIPE)  # `coord serve` in a terminal or a service
    assert "daemon.log" not in served and "standard error" in served, served
