"""Paths as the board names them: relative to the repository root.

A person at a shell means a path relative to the current directory; an agent in a linked git
worktree means the same repository path as one in the main working tree. Both faces that take
paths from agents (the CLI and the MCP tools) send them to the daemon in this canonical form.
A face running inside the daemon has no working directory of the agent's (``workdir`` None):
its paths are taken from the repository root.
"""

from __future__ import annotations

import os

from coord.errors import InvalidInput
from coord.fast import board_files, patterns, worktree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def root_for(board_dir: Path, workdir: str | None) -> str:
    """The working tree's root the agent's paths are relative to: the linked worktree the
    agent works in, or the repository's own root."""
    root = str(board_files.repo_root(board_dir))
    return root if workdir is None else worktree.root_for(workdir, root)


def repo_relative(
    board_dir: Path, given: list[str], *, workdir: str | None, literal: bool = False
) -> list[str]:
    """``given`` patterns (``literal``: file paths) in the form the board stores."""
    root = root_for(board_dir, workdir)
    return [patterns.normalize(p, root, cwd=workdir, literal=literal) for p in given]


def document_path(board_dir: Path, given: str, *, workdir: str | None) -> str:
    """A design document's path as the board knows it (its items' ``spec``)."""
    try:
        return repo_relative(board_dir, [given], workdir=workdir, literal=True)[0]
    except InvalidInput as err:
        raise InvalidInput(f"{given}: {err.message}") from None


def on_disk(board_dir: Path, relative: str, *, workdir: str | None) -> str:
    """Where a repository-relative path is in the agent's working tree."""
    return os.path.join(root_for(board_dir, workdir), relative)
