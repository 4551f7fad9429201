"""The guard in worktrees (issue 24, item 9): no agent writes into another agent's coord
worktree, however the path is spelled, nor into the landing worktree; the owner writes freely in
its own. Real repositories, real linked worktrees made and locked by
``coord.landing.worktrees.create``, a real board; ``coord guard`` and ``coord hook`` as the
processes the clients run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import init_board_dir, stop_leftover_daemon
from coord.core.board import Board
from coord.fast import board_files, holds, mirror, worktree_owner
from coord.fast.git import Git
from coord.landing import steps, worktrees
from coord.model import WorktreeSpec

FIXTURES = Path(__file__).parent / "hooks"
EDITS = [
    ("claude", "PreToolUse", "claude/pre_tool_use_edit.json"),
    ("claude", "PreToolUse", "claude/pre_tool_use_write.json"),
    ("claude", "PreToolUse", "claude/pre_tool_use_multiedit.json"),
    ("codex", "PreToolUse", "codex/pre_tool_use_apply_patch.json"),
    ("gemini", "BeforeTool", "gemini/before_tool_write_file.json"),
]
SHELLS = [
    ("claude", "PreToolUse", "claude/pre_tool_use_bash.json"),
    ("codex", "PreToolUse", "codex/pre_tool_use_bash.json"),
    ("gemini", "BeforeTool", "gemini/before_tool_run_shell_command.json"),
]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class Scene:
    repo: Path
    board_dir: Path
    alice_item: int
    alice: Path  # alice's worktree (her claim of alice_item)
    bob_item: int
    bob: Path
    landing: Path


def claim_with_worktree(board_dir: Path, repo: Path, agent: str, title: str) -> tuple[int, Path]:
    base = git(repo, "rev-parse", "main")
    board = Board.open(board_dir)
    try:
        item = board.add(title, created_by="lead").id
        spec = WorktreeSpec(base_commit=base, path_root=str(repo / ".worktrees"))
        claim = board.landing.claim(item, agent=agent, worktree=spec)
        got = board.get(item)
    finally:
        board.close()
    assert got.branch is not None and got.worktree is not None
    made = worktrees.create(repo, got.branch, base, item=item, token=claim.token)
    assert str(made.path) == got.worktree
    return item, made.path


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "t")
    git(repo, "config", "user.email", "t@example.com")
    (repo / "a.py").write_text("a = 1\n")
    (repo / "src" / "b.py").write_text("b = 1\n")
    (repo / ".gitignore").write_text(".coord/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    board_dir = init_board_dir(repo)
    alice_item, alice = claim_with_worktree(board_dir, repo, "alice", "alice's")
    bob_item, bob = claim_with_worktree(board_dir, repo, "bob", "bob's")
    landing = repo / ".worktrees" / worktree_owner.LANDING_DIRNAME
    steps._landing_worktree(Git(repo), landing, git(repo, "rev-parse", "main"))  # the runner's
    assert (landing / "a.py").exists()
    yield Scene(repo, board_dir, alice_item, alice, bob_item, bob, landing)
    stop_leftover_daemon(board_dir)


def guard(
    scene: Scene, *paths: str, agent: str | None, cwd: Path, extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    if agent is not None:
        env["COORD_AGENT"] = agent
    return subprocess.run(
        [sys.executable, "-m", "coord", "guard", *extra, *paths],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def hook(
    scene: Scene, client: str, event: str, payload: dict, *, agent: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COORD_DIR", "COORD_AGENT")}
    env["COORD_AGENT"] = agent
    payload = {**payload, "cwd": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "coord", "hook", client, event],
        input=json.dumps(payload),
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def fixture(name: str, repo: Path) -> dict:
    text = (FIXTURES / name).read_text().replace("/REPO", str(repo))
    return json.loads(text)


def edit_of(name: str, repo: Path, path: str) -> dict:
    payload = fixture(name, repo)
    tool_input = payload["tool_input"]
    if payload["tool_name"] == "apply_patch":
        tool_input["command"] = (
            f"*** Begin Patch\n*** Update File: {path}\n@@\n-a\n+b\n*** End Patch"
        )
    else:
        tool_input["notebook_path" if "notebook_path" in tool_input else "file_path"] = path
    return payload


def shell_of(name: str, repo: Path, command: str) -> dict:
    payload = fixture(name, repo)
    payload["tool_input"]["command"] = command
    return payload


def denied(result: subprocess.CompletedProcess[str], client: str) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    answer = json.loads(result.stdout)
    if client == "gemini":
        assert answer["decision"] == "deny"
        return str(answer["reason"])
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    return str(out["permissionDecisionReason"])


def allowed(result: subprocess.CompletedProcess[str]) -> None:
    assert (result.returncode, result.stdout) == (0, ""), (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr


# --- coord guard PATH ------------------------------------------------------------------------


def test_guard_refuses_another_agents_worktree_however_spelled(scene: Scene) -> None:
    link = scene.bob / "to-alice"  # an ignored symlink in bob's own worktree
    link.symlink_to(scene.alice)
    spellings = [
        (str(scene.alice / "a.py"), scene.repo),  # absolute
        ("../" + scene.alice.name + "/a.py", scene.bob),  # relative, via ..
        ("src/../../" + scene.alice.name + "/src/b.py", scene.bob),
        (".worktrees/" + scene.alice.name + "/new.py", scene.repo),  # from the main tree
        ("to-alice/a.py", scene.bob),  # through a symlink
    ]
    for path, cwd in spellings:
        refused = guard(scene, path, agent="bob", cwd=cwd)
        assert refused.returncode == 2, (path, refused.stderr)
        line = refused.stderr
        assert f"alice's worktree {scene.alice} (item {scene.alice_item}" in line, line
        assert "`coord start`" in line and "Traceback" not in line
        assert guard(scene, path, agent="alice", cwd=cwd).returncode == 0, path
    verdict = json.loads(
        guard(
            scene, str(scene.alice / "a.py"), agent="bob", cwd=scene.bob, extra=("--json",)
        ).stdout
    )
    (refusal,) = verdict["refusals"]
    assert verdict["may_edit"] is False
    assert (refusal["holder"], refusal["item"], refusal["worktree"], refusal["state"]) == (
        "alice",
        scene.alice_item,
        str(scene.alice),
        "claimed",
    )
    # nobody named: nobody's own
    assert guard(scene, str(scene.alice / "a.py"), agent=None, cwd=scene.repo).returncode == 2


def test_the_owner_writes_in_its_own_worktree_and_other_holds_still_apply(scene: Scene) -> None:
    assert guard(scene, "a.py", "src/new.py", agent="alice", cwd=scene.alice).returncode == 0
    board = Board.open(scene.board_dir)
    try:
        board.reserve(["src/b.py"], agent="bob")
    finally:
        board.close()
    held = guard(scene, "src/b.py", agent="alice", cwd=scene.alice)
    assert held.returncode == 2 and "src/b.py is held by bob" in held.stderr
    # and the main working tree is judged as before: free, or held
    assert guard(scene, "a.py", agent="carol", cwd=scene.repo).returncode == 0
    assert guard(scene, "src/b.py", agent="carol", cwd=scene.repo).returncode == 2


def test_the_landing_worktree_is_refused_for_every_agent(scene: Scene) -> None:
    for agent, cwd in (("alice", scene.alice), ("bob", scene.repo), (None, scene.repo)):
        refused = guard(scene, str(scene.landing / "a.py"), agent=agent, cwd=cwd)
        assert refused.returncode == 2
        assert f"the landing worktree {scene.landing}" in refused.stderr


def test_a_worktree_coord_did_not_make_is_judged_as_today(scene: Scene) -> None:
    other = scene.repo.parent / "by-hand"
    git(scene.repo, "worktree", "add", "-q", "--detach", str(other), "main")
    git(scene.repo, "worktree", "lock", "--reason", "my own experiment", str(other))
    assert guard(scene, str(other / "a.py"), agent="bob", cwd=scene.repo).returncode == 0


def _set_item(scene: Scene, item: int, sql: str, *params: object) -> None:
    conn = sqlite3.connect(scene.board_dir / board_files.DB_FILENAME)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute(f"UPDATE items SET {sql} WHERE id = ?", (*params, item))
        conn.commit()
    finally:
        conn.close()


def test_a_lapsed_claims_worktree_is_refused_to_its_last_holder_too(scene: Scene) -> None:
    _set_item(scene, scene.alice_item, "lease_expires_at = ?", time.time() - 5)
    for agent in ("alice", "bob"):
        refused = guard(scene, str(scene.alice / "a.py"), agent=agent, cwd=scene.repo)
        assert refused.returncode == 2
        assert (
            "has lapsed" in refused.stderr and f"`coord start {scene.alice_item}`" in refused.stderr
        )


def test_a_queued_items_worktree_is_frozen_for_everyone(scene: Scene) -> None:
    head = git(scene.alice, "rev-parse", "HEAD")
    board = Board.open(scene.board_dir)
    try:
        token = board.get(scene.alice_item).fencing_token
        board.landing.submit(scene.alice_item, agent="alice", token=token, head=head)
    finally:
        board.close()
    for agent in ("alice", "bob"):
        refused = guard(scene, str(scene.alice / "a.py"), agent=agent, cwd=scene.repo)
        assert refused.returncode == 2
        assert "which alice submitted: it is queued to land" in refused.stderr


def test_a_worktree_no_claim_holds_is_refused_for_everyone(scene: Scene) -> None:
    # the item was released and claimed again elsewhere: this worktree is an older claim's
    _set_item(scene, scene.alice_item, "fencing_token = fencing_token + 1, worktree = '/elsewhere'")
    for agent in ("alice", "bob"):
        refused = guard(scene, str(scene.alice / "a.py"), agent=agent, cwd=scene.repo)
        assert refused.returncode == 2 and "which no claim holds" in refused.stderr


def _lock_file(worktree: Path) -> Path:
    gitdir = (worktree / ".git").read_text().split(":", 1)[1].strip()
    return Path(gitdir) / "locked"


def test_an_unreadable_lock_or_board_refuses(scene: Scene) -> None:
    lock = _lock_file(scene.alice)
    reason = lock.read_text()
    lock.unlink()
    lock.mkdir()  # read() fails, whoever runs the test (root reads a mode-000 file)
    try:
        refused = guard(scene, str(scene.alice / "a.py"), agent="alice", cwd=scene.alice)
        assert refused.returncode == 2
        assert (
            "cannot check the board" in refused.stderr and "cannot read the lock" in refused.stderr
        )
    finally:
        lock.rmdir()
    lock.write_text("coord item=x token=7")  # coord's, but names no item: cannot tell
    refused = guard(scene, "a.py", agent="alice", cwd=scene.alice)
    assert refused.returncode == 2 and "cannot tell whose worktree" in refused.stderr
    lock.write_text(reason)
    assert guard(scene, "a.py", agent="alice", cwd=scene.alice).returncode == 0
    db = scene.board_dir / board_files.DB_FILENAME
    saved = db.read_bytes()
    db.write_bytes(b"not a database" * 100)
    try:
        refused = guard(scene, "a.py", agent="alice", cwd=scene.alice)
        assert refused.returncode == 2 and "cannot check the board" in refused.stderr
    finally:
        db.write_bytes(saved)


def test_a_board_whose_items_cannot_be_read_refuses_worktree_paths_only(scene: Scene) -> None:
    # the reservations read, the items not (a mirror an older daemon wrote has no items)
    for name in (board_files.DB_FILENAME, mirror.MIRROR_FILENAME):
        copy = scene.repo.parent / f"holds-only-{name}" / name
        copy.parent.mkdir()
        conn = sqlite3.connect(copy)
        conn.execute(
            "CREATE TABLE reservations (id INTEGER PRIMARY KEY, agent TEXT, pattern TEXT, "
            "prefix TEXT, exclusive INTEGER, item_id INTEGER, reason TEXT, created_at REAL, "
            "expires_at REAL, rule INTEGER)"
        )
        conn.close()
        owners = worktree_owner.Owners(str(scene.board_dir), str(copy), None, "alice")
        assert owners.inside(str(scene.repo)) is None  # the main tree reads nothing
        with pytest.raises(holds.BoardUnreadable, match="cannot read"):
            owners.inside(str(scene.alice))


def test_a_postgresql_boards_mirror_says_who_holds_each_worktree(scene: Scene) -> None:
    """The mirror as coord.server.follower writes it (tests/test_pg_mirror.py runs the real
    follower on a real database): the claimed or queued worktree items, read like board.db."""
    board = Board.open(scene.board_dir)
    try:
        alice = board.get(scene.alice_item)
    finally:
        board.close()
    team = scene.repo.parent / "team"
    team.mkdir()
    now = time.time()
    row = (alice.id, "claimed", "alice", alice.fencing_token, now + 600, alice.worktree)
    mirror.write(str(team), [], database_now=now, taken_at=now, last_seq=1, items=[row])
    at = mirror.path_of(str(team))
    assert (
        worktree_owner.Owners(str(scene.board_dir), at, now, "alice").inside(str(scene.alice))
        is None
    )
    theirs = worktree_owner.Owners(str(scene.board_dir), at, now, "bob")
    refused = theirs.inside(str(scene.alice))
    assert refused is not None and (refused.agent, refused.state) == ("alice", "claimed")
    nobodys = theirs.inside(str(scene.bob))  # bob's item is not in this mirror: no claim's
    assert nobodys is not None and "which no claim holds" in nobodys.why
    later = worktree_owner.Owners(str(scene.board_dir), at, now + 601, "alice")
    lapsed = later.inside(str(scene.alice))
    assert lapsed is not None and lapsed.state == "lapsed"


# --- the hooks -------------------------------------------------------------------------------


@pytest.mark.parametrize(("client", "event", "name"), EDITS, ids=[n for _, _, n in EDITS])
def test_an_edit_into_another_agents_worktree_is_denied(
    scene: Scene, client: str, event: str, name: str
) -> None:
    link = scene.bob / "to-alice"
    link.symlink_to(scene.alice)
    for path in (
        str(scene.alice / "a.py"),
        f"../{scene.alice.name}/a.py",
        "to-alice/src/b.py",
    ):
        payload = edit_of(name, scene.repo, path)
        reason = denied(hook(scene, client, event, payload, agent="bob", cwd=scene.bob), client)
        assert f"alice's worktree {scene.alice}" in reason, (path, reason)
        # alice's own: allowed in silence
        mine = edit_of(name, scene.repo, str(scene.alice / "a.py"))
        allowed(hook(scene, client, event, mine, agent="alice", cwd=scene.alice))
    landing = edit_of(name, scene.repo, str(scene.landing / "a.py"))
    reason = denied(hook(scene, client, event, landing, agent="alice", cwd=scene.alice), client)
    assert "the landing worktree" in reason


@pytest.mark.parametrize(("client", "event", "name"), SHELLS, ids=[c for c, _, _ in SHELLS])
def test_a_shell_command_writing_into_another_agents_worktree_is_denied(
    scene: Scene, client: str, event: str, name: str
) -> None:
    theirs = f"../{scene.alice.name}"

    def run(command: str, agent: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return hook(scene, client, event, shell_of(name, scene.repo, command), agent=agent, cwd=cwd)

    for command in (
        f"echo x > {theirs}/a.py",
        f"cp a.py {theirs}/a.py",
        f"cp a.py {theirs}/",
        f"sed -i 's/a/b/' {theirs}/a.py",
        f"rm -rf {theirs}",
        f"touch {theirs}/src/new.py",
        f"cd {theirs} && echo x > a.py",
        f"git -C {theirs} stash",
        f"cd {theirs} && git checkout -- .",
        f"ln {theirs}/a.py mine.py",  # a hard link is her file under another name
        f"mv {theirs}/a.py .",  # moving it out removes it from her worktree
        f"find {theirs} -name '*.py' -delete",
    ):
        reason = denied(run(command, "bob", scene.bob), client)
        assert "alice's worktree" in reason, (command, reason)
    for command, cwd in (
        (f"echo x > .worktrees/{scene.alice.name}/a.py", scene.repo),
        ("rm -rf .worktrees", scene.repo),  # holds alice's worktree
        ("git clean -ffdx .worktrees", scene.repo),  # -ff removes nested worktrees
        ("echo x > a.py", scene.alice.parent / worktree_owner.LANDING_DIRNAME),
    ):
        assert "worktree" in denied(run(command, "bob", cwd), client), command
    # her own: allowed, as is what writes nothing in alice's and bob's own main-tree writes
    for command in ("echo x > a.py", "cp a.py src/c.py", "sed -i 's/a/b/' a.py", "pytest -q"):
        allowed(run(command, "alice", scene.alice))
    allowed(run(f"cat {theirs}/a.py", "bob", scene.bob))
    allowed(run("echo x > notes.txt && make", "bob", scene.repo))
    allowed(run("git clean -fdx .worktrees", "bob", scene.repo))  # one -f skips them
    allowed(run("git stash", "bob", scene.repo))
    # the landing worktree: nobody's
    landing = f"../{worktree_owner.LANDING_DIRNAME}/a.py"
    for agent in ("alice", "bob"):
        cwd = scene.alice if agent == "alice" else scene.bob
        assert "the landing worktree" in denied(run(f"echo x > {landing}", agent, cwd), client)
