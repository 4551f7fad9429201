"""Claude Code, the real client, hears an ask in its next hook and its release lets the
waiting session's edit through (issue 26).

Session A reserves ``src/a.py`` and pauses (its next model turn gated). Session B asks A to
let go (`coord ask`), then waits its turn (`coord wait`, a Bash call that blocks B until it
is granted) before it edits the file. A's next tool call runs its PostToolUse hook, whose
``additionalContext`` carries B's ask into A's next request to the model; A's scripted model
answers `coord answer-ask 1 release`; the release grants B in the same transaction, B's wait
prints its one line, and B's edit goes through the guard. The helpers and the way the
client is run are ``test_claude_code``'s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from real_clients import test_claude_code as cc
from real_clients.fake_anthropic import FakeAnthropic
from real_clients.npm_clients import client_executable
from real_clients.repo import coord, path_with_coord, wired_repo

pytestmark = pytest.mark.timeout(3 * cc.CLIENT_SECONDS)


@pytest.fixture(scope="module")
def claude() -> Path:
    return client_executable("@anthropic-ai/claude-code")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    repo = wired_repo(tmp_path, "--claude", cc.FILES)
    yield repo
    coord(repo, "stop")


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def test_a_holder_hears_the_ask_in_its_next_hook_and_its_release_lets_the_waiter_edit(
    claude: Path, repo: Path, fake: FakeAnthropic
) -> None:
    fake.script(
        "a",
        [
            [cc.bash("coord reserve src/a.py")],
            [cc.bash("echo working")],
            [cc.bash("echo still working")],  # gated: B asks meanwhile; its hook says so
            [cc.bash("coord answer-ask 1 release --reason 'take it'")],
        ],
    )
    ask = "coord ask src/a.py --reason 'B needs a.py for the fix'"
    wait = "coord wait src/a.py --timeout 100"
    fake.script(
        "b",
        [
            [cc.bash(ask)],
            [cc.bash(wait)],
            [cc.read(repo, "src/a.py")],
            [cc.edit(repo, "src/a.py", "a = 1", "a = 5")],
        ],
    )
    a_waits = fake.gate("a", 2)
    session_a = cc.start_claude(claude, repo, fake, "a", path=path_with_coord())
    session_b = None
    try:
        assert a_waits.reached.wait(cc.CLIENT_SECONDS), "session A never reached its gate"
        session_b = cc.start_claude(claude, repo, fake, "b", path=path_with_coord())
        deadline = time.monotonic() + cc.CLIENT_SECONDS
        while not any(o.input.get("command") == ask and not o.is_error for o in fake.outcomes("b")):
            assert time.monotonic() < deadline, fake.outcomes("b")
            time.sleep(0.1)
    finally:
        a_waits.opened.set()
    run_a = cc.finish(session_a)
    assert session_b is not None
    run_b = cc.finish(session_b)
    cc.assert_hooks_clean(run_a)
    cc.assert_hooks_clean(run_b)

    # A's request after its gated turn carried B's ask, from its PostToolUse hook's context
    answer_turn = json.dumps(fake.main_requests("a")[-1])
    assert "asks you to let go of src/a.py" in answer_turn
    assert "B needs a.py for the fix" in answer_turn
    assert "coord answer-ask 1 release" in answer_turn
    released = cc.outcome(
        fake, "a", "Bash", "command", "coord answer-ask 1 release --reason 'take it'"
    )
    assert not released.is_error and "released for" in released.result, released
    waited = cc.outcome(fake, "b", "Bash", "command", wait)
    assert not waited.is_error and "granted: src/a.py reserved for you" in waited.result, waited
    edited = cc.outcome(fake, "b", "Edit", "file_path", str(repo / "src/a.py"))
    assert not edited.is_error, edited
    assert (repo / "src/a.py").read_text() == "a = 5\n"
    assert cc.holder(repo, "src/a.py").startswith("claude-")  # B's, granted by the release
