"""Issue 13 items 2, 3, 4 and 6: a held file is refused however its path is spelled.

Real files on disk (real symlinks, a real `git worktree add`, real hard links) and every face
that judges a path: `coord guard` as a process, and `coord hook CLIENT EVENT` fed each
client's documented hook JSON (Claude Code's Edit and Bash, Codex's apply_patch and Bash,
Gemini CLI's write_file and run_shell_command).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from test_guard_cli import guard
from test_hooks import GUARDS, allowed, denied, fixture, hook, reserve, with_command, with_path

EDIT_FACES = {
    "claude-edit": ("claude", "claude/pre_tool_use_edit.json"),
    "codex-apply_patch": ("codex", "codex/pre_tool_use_apply_patch.json"),
    "gemini-write_file": ("gemini", "gemini/before_tool_write_file.json"),
}
SHELL_FACES = {
    "claude-bash": ("claude", "claude/pre_tool_use_bash.json"),
    "codex-bash": ("codex", "codex/pre_tool_use_bash.json"),
    "gemini-run_shell_command": ("gemini", "gemini/before_tool_run_shell_command.json"),
}


def edit(face: str, repo: Path, board_dir: Path, path: str, cwd: Path | None = None) -> Any:
    client, name = EDIT_FACES[face]
    payload = with_path(fixture(name, repo), path)
    payload["cwd"] = str(cwd or repo)
    return client, hook(client, GUARDS[client], payload, board_dir=board_dir, cwd=cwd or repo)


def shell(face: str, repo: Path, board_dir: Path, command: str) -> Any:
    client, name = SHELL_FACES[face]
    payload = with_command(fixture(name, repo), command)
    return client, hook(client, GUARDS[client], payload, board_dir=board_dir, cwd=repo)


def refused_by_every_face(repo: Path, board_dir: Path, path: str, holder: str) -> None:
    """`coord guard`, every edit tool and every shell tool refuse writing ``path``."""
    result = guard(board_dir, path, agent="bob", cwd=repo)
    assert result.returncode == 2, (path, result.stdout, result.stderr)
    assert f"held by {holder}" in result.stderr
    for face in EDIT_FACES:
        client, result = edit(face, repo, board_dir, path)
        assert f"held by {holder}" in denied(result, client), (face, path)
    for face in SHELL_FACES:
        client, result = shell(face, repo, board_dir, f"echo x > {shlex.quote(path)}")
        assert f"{holder} holds" in denied(result, client), (face, path)


def allowed_by_every_face(repo: Path, board_dir: Path, path: str) -> None:
    result = guard(board_dir, path, agent="bob", cwd=repo)
    assert result.returncode == 0, (path, result.stdout, result.stderr)
    for face in EDIT_FACES:
        allowed(edit(face, repo, board_dir, path)[1])
    for face in SHELL_FACES:
        allowed(shell(face, repo, board_dir, f"echo x > {shlex.quote(path)}")[1])


# --- 2: `..` after a symlink is taken where the symlink leads --------------------------------


def test_dot_dot_after_a_symlink_is_judged_where_the_os_resolves_it(board_dir: Path) -> None:
    """``deep -> src/sub``: ``deep/../a.py`` is physically ``src/a.py`` (the OS follows the
    symlink, then ``..``); read lexically it was ``a.py`` at the root, which nobody holds."""
    repo = board_dir.parent
    (repo / "src" / "sub").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("held\n")
    (repo / "deep").symlink_to("src/sub")
    reserve(board_dir, ["src/a.py"], "alice")
    refused_by_every_face(repo, board_dir, "deep/../a.py", "alice")
    refused_by_every_face(repo, board_dir, str(repo / "deep" / ".." / "a.py"), "alice")
    allowed_by_every_face(repo, board_dir, "deep/../b.py")  # src/b.py: free
    allowed_by_every_face(repo, board_dir, "deep/x.py")
    # the holder still may
    assert guard(board_dir, "deep/../a.py", agent="alice", cwd=repo).returncode == 0


# --- 3: a linked worktree nested inside the main tree ----------------------------------------


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_a_nested_linked_worktree_seen_from_the_main_tree_names_the_same_files(
    board_dir: Path,
) -> None:
    repo = board_dir.parent
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("a\n")
    (repo / "src" / "b.py").write_text("b\n")
    git(repo, "init", "-q")
    git(repo, "add", "src")
    git(repo, "commit", "-qm", "first")
    git(repo, "worktree", "add", "-q", ".claude/worktrees/wt")
    assert (repo / ".claude/worktrees/wt/src/a.py").is_file()
    reserve(board_dir, ["src/a.py"], "alice")
    refused_by_every_face(repo, board_dir, ".claude/worktrees/wt/src/a.py", "alice")
    refused_by_every_face(repo, board_dir, str(repo / ".claude/worktrees/wt/src/a.py"), "alice")
    allowed_by_every_face(repo, board_dir, ".claude/worktrees/wt/src/b.py")
    for face in SHELL_FACES:  # from the main tree, into the worktree, through cd
        command = "cd .claude/worktrees/wt && sed -i s/a/b/ src/a.py"
        client, result = shell(face, repo, board_dir, command)
        assert "alice holds" in denied(result, client)


# --- 4: hard links --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ln src/a.py b.py",
        "ln -f src/a.py lib/",
        "ln -t lib src/a.py",
        "cp -l src/a.py b.py",
        "cp --link src/a.py b.py",
    ],
)
def test_a_hard_link_to_a_held_file_cannot_be_made(board_dir: Path, command: str) -> None:
    """A hard link is the held file under another name: making one is writing it."""
    repo = board_dir.parent
    (repo / "src").mkdir()
    (repo / "lib").mkdir()
    (repo / "src" / "a.py").write_text("held\n")
    reserve(board_dir, ["src/a.py"], "alice")
    for face in SHELL_FACES:
        client, result = shell(face, repo, board_dir, command)
        assert "alice holds src/a.py" in denied(result, client), (face, command)
    for face in SHELL_FACES:  # a symbolic link and a copy do not make it writable elsewhere
        for free in ("ln -s src/a.py c.py", "cp src/a.py c.py", "ln lib/x.py c.py"):
            allowed(shell(face, repo, board_dir, free)[1])


def test_an_existing_hard_link_to_a_held_file_is_refused(board_dir: Path) -> None:
    repo = board_dir.parent
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("held\n")
    (repo / "src" / "free.py").write_text("free\n")
    os.link(repo / "src" / "a.py", repo / "b.py")  # made before the hold, or outside coord
    os.link(repo / "src" / "free.py", repo / "c.py")  # linked, but nobody holds either name
    reserve(board_dir, ["src/a.py"], "alice")
    refused_by_every_face(repo, board_dir, "b.py", "alice")
    refused_by_every_face(repo, board_dir, str(repo / "b.py"), "alice")
    allowed_by_every_face(repo, board_dir, "c.py")
    assert guard(board_dir, "b.py", agent="alice", cwd=repo).returncode == 0


# --- 6: an absolute path outside is judged where it is ---------------------------------------


@pytest.mark.parametrize("top", ["etc", "tmp"])
def test_an_absolute_path_outside_is_never_re_rooted_at_the_repository(
    board_dir: Path, top: str
) -> None:
    """The repository has a top-level ``etc/`` (or ``tmp/``), all of it held: ``/etc/...``
    is still the system's, in no coord repository, so coord allows it."""
    repo = board_dir.parent
    (repo / top).mkdir()
    (repo / top / "passwd").write_text("held\n")
    reserve(board_dir, [top], "alice")
    outside = f"/{top}/passwd" if top == "etc" else f"/{top}/coord-test-{os.getpid()}"
    result = guard(board_dir, outside, agent="bob", cwd=repo)
    assert result.returncode == 0, result.stderr
    for face in EDIT_FACES:
        allowed(edit(face, repo, board_dir, outside)[1])
    for face in SHELL_FACES:
        for command in (
            f"cat {outside} > /dev/null",
            f"echo x > {outside}",  # not run: judged only
            f"rm -f /{top}/*.coord-test-none",
            f"cd /{top} && touch coord-test-none",
            f"cp {top}/passwd /{top}/",
        ):
            allowed(shell(face, repo, board_dir, command)[1])
    refused_by_every_face(repo, board_dir, f"{top}/passwd", "alice")  # the repository's own
