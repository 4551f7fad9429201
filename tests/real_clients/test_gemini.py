"""Gemini CLI 0.61.0 (``@google/gemini-cli``, pinned in ``npm_clients.PINNED``) obeys coord.

How it is driven: the pinned package from the npm registry, run as ``gemini --fake-responses
FILE --model gemini-2.5-flash --approval-mode yolo --output-format stream-json --prompt ...`` in
a repository wired by ``coord init --gemini`` (its ``.gemini/settings.json``: the BeforeTool
guard, SessionStart, AfterAgent and the MCP server, each calling a bare ``coord``). The model
is Gemini CLI's own fake-responses mode: a file of scripted model turns whose ``functionCall``
parts the real client executes through its real tool scheduler and hooks (see
``fake_gemini``). ``--approval-mode yolo`` runs every tool without a prompt, so a refusal can
only come from coord's hook. Each run has a temporary home (``HOME``, ``GEMINI_CLI_HOME``) that
records the repository as trusted in ``~/.gemini/trustedFolders.json``: folder trust is on by
default and an untrusted folder's project settings are ignored (not ``--skip-trust``, which
drops them too). The board is real and the daemon starts on the first hook that needs it.

What a refusal looks like to the client: the hook prints ``{"decision": "deny", ...}`` (or
exits 2 when ``coord`` is missing) and the tool's stream-json result is ``status: "error"`` with
``error.type: "policy_violation"`` and coord's reason.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from coord.fast.identity import session_name
from real_clients import fake_gemini
from real_clients.fake_gemini import GeminiRun, say, tool_call
from real_clients.repo import coord, path_with_coord, path_without_coord, wired_repo

pytestmark = pytest.mark.timeout(240)

FILES = {"src/held.py": "held\n", "src/free.py": "free\n", "src/a.py": "a\n", "src/b.py": "b\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    repo = wired_repo(tmp_path, "--gemini", FILES)
    yield repo
    coord(repo, "stop")  # the daemon a hook started


def refused(run: GeminiRun, tool: str) -> list[str]:
    """The reasons a hook gave for refusing each call of `tool` in the run."""
    return [t.output for t in run.tools if t.name == tool and t.error_type == "policy_violation"]


def succeeded(run: GeminiRun, tool: str) -> list[fake_gemini.ToolResult]:
    return [t for t in run.tools if t.name == tool and t.status == "success"]


def replace(path: str, old: str, new: str) -> dict[str, object]:
    # 0.61.0's replace requires an `instruction` (what the edit is for) beside the strings
    return tool_call(
        "replace", file_path=path, old_string=old, new_string=new, instruction="edit the file"
    )


def wait_for(marker: Path) -> str:
    """A shell command that waits (up to a bound) until `marker` exists; no `$(...)`, which
    Gemini CLI refuses to run."""
    return f"timeout 90 sh -c 'until [ -e {marker} ]; do sleep 0.1; done'"


def holders(repo: Path) -> dict[str, str]:
    done = coord(repo, "--json", "reservations")
    assert done.returncode == 0, done.stderr
    return {r["pattern"]: r["agent"] for r in json.loads(done.stdout)["reservations"]}


def test_a_held_file_is_refused_and_unchanged_a_free_file_is_edited(
    repo: Path, tmp_path: Path
) -> None:
    held = coord(repo, "reserve", "src/held.py", agent="other")
    assert held.returncode == 0, held.stderr
    home = fake_gemini.home(tmp_path, repo)
    script = [
        tool_call("write_file", file_path="src/held.py", content="overwritten\n"),
        tool_call("write_file", file_path=str(repo / "src/held.py"), content="overwritten\n"),
        replace("src/held.py", "held", "mine"),
        tool_call("run_shell_command", command="echo x > src/held.py"),
        tool_call("run_shell_command", command="echo x > held.py", dir_path="src"),
        tool_call("write_file", file_path="src/free.py", content="edited\n"),
        replace("src/free.py", "edited", "edited twice"),
        say("done"),
    ]

    run = fake_gemini.run(repo, home, script, path=path_with_coord())

    assert run.returncode == 0, run.stderr[-3000:]
    for tool, calls in (("write_file", 2), ("replace", 1), ("run_shell_command", 2)):
        reasons = refused(run, tool)
        assert len(reasons) == calls, (tool, run.tools)
        assert all("src/held.py" in r and "other" in r for r in reasons), reasons
    assert (repo / "src/held.py").read_text() == "held\n"
    assert [t.parameters["file_path"] for t in succeeded(run, "write_file")] == ["src/free.py"]
    assert [t.parameters["file_path"] for t in succeeded(run, "replace")] == ["src/free.py"]
    assert (repo / "src/free.py").read_text() == "edited twice\n"


def test_two_sessions_started_seconds_apart_get_their_own_names_and_files(
    repo: Path, tmp_path: Path
) -> None:
    home = fake_gemini.home(tmp_path, repo)
    # Ids that start alike, as time-ordered ids of sessions started together do: the names
    # must still differ. The ids are chosen so the scripts can name their agent the way a
    # model does, from coord's SessionStart context ("pass `--as NAME`"): Gemini CLI 0.61.0
    # gives a shell command no session id and no env file a hook could fill, and the CLI
    # takes its name only from --as or COORD_AGENT.
    id_a, id_b = (f"019ad1c3-7e5a-7000-8000-00000000000{n}" for n in (1, 2))
    name_a, name_b = session_name("gemini", id_a), session_name("gemini", id_b)
    a_ready, b_finished = tmp_path / "a-ready", tmp_path / "b-finished"
    # A reserves a file with its own `coord` and edits it, then stays alive until B has
    # finished; B, started right after A, first waits until A holds its file. So the two
    # sessions overlap, and the order of their edits does not depend on timing.
    script_a = [
        tool_call("run_shell_command", command=f"coord reserve src/a.py --as {name_a}"),
        tool_call("write_file", file_path="src/a.py", content="by A\n"),
        tool_call("run_shell_command", command=f"touch {a_ready}"),
        tool_call("run_shell_command", command=wait_for(b_finished)),
        say("done"),
    ]
    script_b = [
        tool_call("run_shell_command", command=wait_for(a_ready)),
        tool_call("run_shell_command", command=f"coord reserve src/b.py --as {name_b}"),
        tool_call("write_file", file_path="src/a.py", content="by B\n"),
        tool_call("write_file", file_path="src/b.py", content="by B\n"),
        say("done"),
    ]

    session_a = fake_gemini.start(
        repo, home, script_a, path=path_with_coord(), name="a", session_id=id_a
    )
    try:
        run_b = fake_gemini.run(
            repo, home, script_b, path=path_with_coord(), name="b", session_id=id_b
        )
    finally:
        b_finished.touch()  # A's last command ends, and with it session A
        run_a = fake_gemini.finish(session_a)

    # what the clients did first: B could not overwrite A's file
    assert (repo / "src/a.py").read_text() == "by A\n"
    reasons = refused(run_b, "write_file")
    assert len(reasons) == 1 and name_a in reasons[0] and "src/a.py" in reasons[0], run_b.tools
    assert name_a != name_b
    for run, name in ((run_a, name_a), (run_b, name_b)):
        assert run.returncode == 0, run.stderr[-3000:]
        assert f"You are coord agent `{name}`" in run.context()
        shell = [t for t in run.tools if t.name == "run_shell_command"]
        assert all(t.status == "success" and "Exit Code" not in t.output for t in shell), shell
        assert all("Blocked" not in t.output for t in shell), shell  # Gemini's own refusals
    assert holders(repo) == {"src/a.py": name_a, "src/b.py": name_b}
    agents = json.loads(coord(repo, "--json", "agents").stdout)["agents"]
    assert {a["name"] for a in agents} == {name_a, name_b}
    # each guard knew its own session's name: each agent's own file was free to it
    assert [t.parameters["file_path"] for t in succeeded(run_a, "write_file")] == ["src/a.py"]
    assert [t.parameters["file_path"] for t in succeeded(run_b, "write_file")] == ["src/b.py"]
    assert (repo / "src/b.py").read_text() == "by B\n"


def test_the_guard_refuses_when_coord_is_not_on_path(repo: Path, tmp_path: Path) -> None:
    home = fake_gemini.home(tmp_path, repo)
    script = [tool_call("write_file", file_path="src/free.py", content="edited\n"), say("done")]

    run = fake_gemini.run(repo, home, script, path=path_without_coord())

    reasons = refused(run, "write_file")
    assert len(reasons) == 1, (run.tools, run.stderr[-3000:])
    assert "coord is not on PATH" in reasons[0]
    assert (repo / "src/free.py").read_text() == "free\n"


def test_the_guard_refuses_when_coord_itself_fails(repo: Path, tmp_path: Path) -> None:
    """Gemini CLI lets a call through when its hook exits 1 ("non-blocking error"): a `coord`
    that fails that way (a broken install, a crash) must still refuse, not allow."""
    broken = tmp_path / "broken-bin"
    broken.mkdir()
    (broken / "coord").write_text("#!/bin/sh\necho 'coord: broken install' >&2\nexit 1\n")
    (broken / "coord").chmod(0o755)
    home = fake_gemini.home(tmp_path, repo)
    script = [tool_call("write_file", file_path="src/free.py", content="edited\n"), say("done")]

    run = fake_gemini.run(
        repo, home, script, path=os.pathsep.join((str(broken), path_without_coord()))
    )

    reasons = refused(run, "write_file")
    assert len(reasons) == 1, (run.tools, run.stderr[-3000:])
    assert "exited 1" in reasons[0]
    assert (repo / "src/free.py").read_text() == "free\n"


def test_an_untrusted_folder_keeps_coords_hooks_from_running(repo: Path, tmp_path: Path) -> None:
    """What `coord init --gemini` warns of: without trust Gemini CLI runs no project hooks.

    Headless, 0.61.0 refuses to start in an untrusted folder; `--skip-trust` starts it but
    drops the project's settings, so a held file is overwritten with no hook asked.
    """
    held = coord(repo, "reserve", "src/held.py", agent="other")
    assert held.returncode == 0, held.stderr
    home = fake_gemini.home(tmp_path, repo, trusted=False)
    script = [
        tool_call("write_file", file_path="src/held.py", content="overwritten\n"),
        say("done"),
    ]

    untrusted = fake_gemini.run(repo, home, script, path=path_with_coord(), name="untrusted")
    assert untrusted.returncode != 0
    assert "not running in a trusted directory" in untrusted.stderr
    assert (repo / "src/held.py").read_text() == "held\n"

    skipped = fake_gemini.run(
        repo, home, script, path=path_with_coord(), name="skip", args=("--skip-trust",)
    )
    assert skipped.returncode == 0, skipped.stderr[-3000:]
    assert "coord is in use" not in skipped.context()  # no SessionStart hook either
    assert not refused(skipped, "write_file"), skipped.tools
    assert (repo / "src/held.py").read_text() == "overwritten\n"
