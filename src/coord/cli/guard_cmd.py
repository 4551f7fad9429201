"""`coord guard`: the decision printed the way hooks and scripts read it.

Stdlib and coord's small modules only (no argparse, no HTTP): it runs before every edit, and
``coord.cli.entry`` routes plain ``coord guard ...`` calls straight here.
"""

from __future__ import annotations

import json
import os
import sys

from coord.errors import EXIT_REFUSED, InvalidInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def run_guard(
    given: list[str], agent: str | None, *, staged: bool, fail_open: bool, as_json: bool
) -> tuple[dict[str, Any], str]:
    """Print the verdict and exit 2 when refused. No name means a person at the keyboard,
    whom every agent's exclusive reservation binds."""
    from coord.fast import board_files, guard

    board_dir = board_files.locate()  # a str: pathlib costs a tenth of the guard's budget
    if staged and board_dir is not None:
        try:
            given = _staged_paths(board_dir)
        except InvalidInput as err:
            print(f"coord guard: {err.message}; refusing the commit", file=sys.stderr)
            raise SystemExit(EXIT_REFUSED) from None
        if not given:
            return guard_verdict_ok(), ""
    code, lines, verdict = guard.check(
        board_dir, given, agent, cwd=os.getcwd(), fail_open=fail_open
    )
    if lines:
        print("\n".join(lines), file=sys.stderr)
    if code != 0:
        if as_json:
            print(json.dumps(verdict))
        raise SystemExit(code)
    return verdict, ""


def guard_verdict_ok() -> dict[str, Any]:
    return {"may_edit": True, "refusals": [], "note": "nothing staged"}


def _staged_paths(board_dir: str) -> list[str]:
    from pathlib import Path

    from coord.errors import GitError
    from coord.fast import worktree
    from coord.fast.git import Git

    # the commit being made is the one of the worktree we run in (a linked one, perhaps)
    root = worktree.root_for(os.getcwd(), os.path.dirname(board_dir))
    # `git commit -a` / `git commit PATH` stage into a temporary index that git names to the
    # hook in GIT_INDEX_FILE; the runner drops that variable unless it is given explicitly
    index = os.environ.get("GIT_INDEX_FILE")
    runner = Git(Path(root), {"GIT_INDEX_FILE": index} if index else None)
    try:
        out = runner.run("diff", "--cached", "--name-only", "-z", "--no-renames").stdout
    except GitError as err:
        # the guard cannot tell what is being committed: it refuses (exit 2, not 1)
        raise InvalidInput(f"cannot list the staged paths with git: {err.message}") from None
    return [os.path.join(root, p) for p in out.decode().split("\0") if p]
