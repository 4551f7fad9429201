"""The guard for shell commands: may this agent run this command?

Every client's shell tool comes here once its hook JSON is read (an edit tool goes straight
to ``coord.fast.guard.check``, as ``coord guard`` does). ``coord.hooks.shell`` finds the files
the command would write; each is placed as an edit tool's path is (``coord.fast.targets``)
and judged by the same rule on the same read-only look at the board
(``coord.fast.guard.judge``), so an edit tool and a shell command writing the same file get
the same answer. Whoever holds what, a command that writes into coord's board directory or
deletes it (``rm -rf .coord``, ``git clean -fdx``) is refused (``coord.fast.own_files``).
A git command that rewrites the working tree (``git stash``, ``git reset --hard``, ``git
checkout .``...) is judged by the files git says it would change (``coord.hooks.git_rewrites``).
What the command could reach without the guard knowing what it writes (a script, ``$OUT``, a
program it does not know) is placed by ``coord.hooks.shell_reach`` and refused when another
agent holds a file there, saying why; a command past the reader's bounds is refused with the
reason. All targets of one command are judged on one read of each board. A
refusal is the reason to show the agent; ``None`` allows.

Stdlib only and no daemon: it runs before every shell command.
"""

from __future__ import annotations

import os

from coord.errors import InvalidInput
from coord.fast import board_files, guard, holds, own_files, targets
from coord.hooks import shell_reach as reach
from coord.times import clock, iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from coord.hooks.shell import Writes

# git clean's options that take a value (as the next word, or attached)
_CLEAN_VALUE = frozenset({"-e", "--exclude"})


def refusal(
    home: str | None,
    command: str,
    agent: str | None,
    cwd: str,
    *,
    refused_by: list[dict[str, Any]] | None = None,
) -> str | None:
    """Why ``agent`` may not run ``command``: it skips the pre-commit guard, it writes a
    file another agent holds, or it could reach one and the guard cannot tell what it
    writes. None allows (commands that write nothing never read a board). ``refused_by``
    gets the holds that refused a write the guard read (path, holder, expires_at), as the
    guard's verdict lists them: what the deny's next step is built from."""
    from coord.hooks import shell

    found = shell.analyse(command, cwd)
    if found.too_big is not None:
        return None if home is None else f"coord: {found.too_big}; refusing it"
    if found.bypass and home is not None:
        return (
            f"coord: `{found.bypass[0]}` would skip coord's pre-commit guard (`coord guard "
            "--staged`), which refuses commits of files another agent holds; commit without it"
        )
    own = _own_files_refusal(found, home)
    if own is not None:
        return own
    if found.git:  # stash, reset --hard, checkout ., clean...: judged by what they change
        from coord.hooks import git_rewrites

        stashed: dict[str, list[tuple[str, bool]]] = {}  # git stash push, then pop
        for args, where in found.git:
            rewrite = git_rewrites.refusal(args, where, home, agent, command, stashed)
            if rewrite is not None:
                return rewrite
    # one per board, working tree and canonical name (``a.py`` in another agent's worktree is
    # not the main tree's): (the target, the word as written, why it is unread)
    placed: dict[tuple[str, str, str], tuple[targets.Target, str, str | None]] = {}
    written: list[tuple[str, str, str | None]] = [
        (raw, where, None) for raw, where in found.targets
    ]
    if found.links:  # `ln -s HELD x && echo > x`: the link is not there yet when judged
        for index, (raw, where) in enumerate(found.targets):
            lands = found.through_links(index, raw, where)
            if lands is not None:
                written.append((lands, where, None))
    replaced = set(found.replaced)
    directories = reach.Directories(home)
    for raw, where, why in written + found.unread:
        try:
            follow = why is not None or (raw, where) not in replaced
            reached = reach.placed(
                raw, where, cwd, home, why, follow=follow, directories=directories
            )
        except InvalidInput as err:
            return f"coord: this command writes {raw}: {err.message}; refusing it"
        for target, unjudged in reached:
            key = (target.board_dir, target.root, target.name)
            placed.setdefault(key, (target, raw, unjudged))
    if not placed:
        return None
    # a write the guard read reaches what is beneath a directory it names (rm -rf, cp -r):
    # the worktrees nested there too; what it cannot read is judged where it runs, not by
    # the worktrees beneath (a build in the main tree does not write into .worktrees/)
    beneath = [t for t, _, why in placed.values() if why is None]
    try:
        judged = guard.judge([t for t, _, _ in placed.values()], agent, beneath=beneath)
    except holds.BoardUnreadable as err:
        return f"coord: cannot check the board ({err}); refusing the command"
    lines: list[str] = []
    unread: dict[str, dict[int, holds.Held]] = {}  # why -> the holds it could reach
    for (_, blocking), (written_to, raw, why) in zip(judged, placed.values(), strict=True):
        for r in blocking:
            if guard.is_worktree(r):
                line = _worktree_line(raw, r, why)
            elif why is not None:
                unread.setdefault(why, {})[r.id] = r
                continue
            else:
                line = _shell_line(raw, r)
                if refused_by is not None:
                    refused_by.append(
                        {
                            "path": written_to.name,
                            "holder": r.agent,
                            "expires_at": iso(r.expires_at),
                        }
                    )
            if line not in lines:
                lines.append(line)
    lines += [_unread_line(why, list(reached.values())) for why, reached in unread.items()]
    return "\n".join(lines) or None


def _shell_line(raw: str, r: holds.Held) -> str:
    until = clock(r.expires_at)
    item = f" for item {r.item_id}" if r.item_id is not None else ""
    return (
        f"coord: this command writes {raw}, and {r.agent} holds {r.pattern}{item} until {until}; "
        f"do not change it: pick other work or ask {r.agent}"
    )


def _worktree_line(raw: str, r: Any, unread: str | None) -> str:
    if unread is None:
        return f"coord: this command writes {raw}: {r.why}; refusing it"
    return (
        f"coord: {unread}: the guard cannot tell what it writes, and it runs where it could "
        f"write into a worktree it may not: {r.why}; refusing it"
    )


def _unread_line(why: str, reached: list[holds.Held]) -> str:
    held = ", ".join(
        f"{r.pattern} ({r.agent}"
        + (f", item {r.item_id}" if r.item_id is not None else "")
        + f", until {clock(r.expires_at)})"
        for r in reached[:5]
    )
    more = f" and {len(reached) - 5} more" if len(reached) > 5 else ""
    return (
        f"coord: {why}: the guard cannot tell what it writes, and it could reach what "
        f"another agent holds: {held}{more}; refusing it: name the files it writes in the "
        "command itself (>, cp, sed -i ...), or wait until they are free"
    )


def _own_files_refusal(found: Writes, home: str | None) -> str | None:
    """Why the command would delete or overwrite a board directory (``coord.fast.own_files``):
    a write into it, a removal of it or of a directory above it, a ``git clean`` that
    reaches it."""
    for raw, where in found.targets:
        if (raw, where) in found.removed:
            continue  # judged below: deleting a symlink is not writing through it
        for path in _expanded(raw, where):
            if own_files.board_holding(path, where, home) is not None:
                return f"coord: this command would change {raw}: {own_files.WHY}; refusing it"
    for raw, where in found.removed:
        for path in _expanded(raw, where):
            if own_files.board_beneath(path, where, home) is not None:
                return f"coord: this command would delete {raw}: {own_files.WHY}; refusing it"
    for args, where in found.git:
        cleaned = _git_clean_reach(args, where, home)
        if cleaned is not None:
            return f"coord: this `git clean` would delete {cleaned}: {own_files.WHY}; refusing it"
    return None


def _expanded(raw: str, where: str) -> list[str]:
    """``raw`` as the shell expands it: a glob's matches (``rm -rf .c*``), else itself."""
    if not raw or "$" in raw or "`" in raw or not set(raw) & set("*?["):
        return [raw] if raw and "$" not in raw and "`" not in raw else []
    import glob

    # the shell's rules: a leading-dot name only for a pattern that starts with a dot
    return glob.glob(raw, root_dir=where) or [raw]


def _git_clean_reach(args: list[str], cwd: str, home: str | None) -> str | None:
    """The board that ``git ARGS`` run in ``cwd`` would delete when it is ``git clean``.

    ``git clean`` deletes untracked files; ``-x`` or ``-X`` ignored ones too, and a board is
    ignored (its own ``.gitignore`` says ``*``). Without a pathspec it cleans the current
    directory and enters untracked directories only with ``-d``; a pathspec reaches what it
    names whatever ``-d`` says (git's documentation, and what git 2.x does). ``-n`` deletes
    nothing; ``-e .coord`` keeps it.
    """
    if home is None:
        return None
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            cwd = os.path.join(cwd, os.path.expanduser(args[i + 1]))
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(args) or args[i] != "clean":
        return None
    letters, excludes, pathspecs = "", [], []
    rest = iter(args[i + 1 :])
    for arg in rest:
        if arg == "--":
            pathspecs += list(rest)
        elif arg in _CLEAN_VALUE:
            excludes.append(next(rest, ""))
        elif arg.startswith("--exclude="):
            excludes.append(arg.partition("=")[2])
        elif arg.startswith("--"):
            letters += {"--dry-run": "n", "--force": "f"}.get(arg, "")
        elif arg.startswith("-") and arg != "-":
            head, _, attached = arg[1:].partition("e")
            letters += head
            if "e" in arg[1:]:
                excludes.append(attached or next(rest, ""))
        else:
            pathspecs.append(arg)
    if "n" in letters or any(e.strip("/") == board_files.BOARD_DIRNAME for e in excludes):
        return None
    if not pathspecs and "d" not in letters:
        return None  # untracked directories are not entered
    if "x" not in letters and "X" not in letters and _ignored(home):
        return None
    for spec in pathspecs or ["."]:
        glob_at = min((spec.find(c) for c in "*?[" if c in spec), default=-1)
        if glob_at >= 0:  # a glob may match the board: judge the directory it starts in
            spec = os.path.dirname(spec[:glob_at])
        if own_files.board_beneath(spec or ".", cwd, home) is not None:
            return os.path.basename(home) + "/"
    return None


def _ignored(board: str) -> bool:
    """Is the board ignored by git, so that ``git clean`` without ``-x`` keeps it? ``coord
    init`` writes ``.coord/.gitignore`` (``*``); a board without it is asked about."""
    if os.path.isfile(os.path.join(board, ".gitignore")):
        return True
    import subprocess

    try:
        done = subprocess.run(
            ["git", "check-ignore", "-q", board],
            cwd=os.path.dirname(board),
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
