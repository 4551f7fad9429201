"""git commands that rewrite the working tree, judged by the files they could change.

``git stash``, ``git reset --hard``, ``git checkout .``, ``git clean -fd`` and their kin
(``coord.hooks.git_reach`` lists them, from git's documentation) write no path the shell
parser can see, yet each can put away, overwrite or delete another agent's uncommitted work.
So for each ``git`` command the shell guard found (``coord.hooks.shell.Writes.git``):

1. A command that changes nothing in the working tree (``status``, ``diff``, ``log``,
   ``add``, ``commit``...) is allowed at once: no git process, no board read.
2. Otherwise the board is read once for what other agents hold in this working tree; when
   they hold nothing, it is allowed, still without running git.
3. Otherwise git is asked which files the command would change (``git status``, ``git diff
   --name-only``, ``git clean -n``...), and each is placed and judged as a shell command's
   target is (``coord.fast.targets.place``, ``coord.fast.guard.judge``): refused when another
   agent holds one, with what to do instead.
4. When coord cannot tell (a revision git does not know, a patch on standard input, a rebase
   under way, an alias that runs a shell, git failing), it refuses, naming what is held. So
   it does, for any git command, readers too, given a ``-c`` setting under which git runs a
   program (``git -c core.fsmonitor=CMD status`` runs CMD) or a command line that sets
   ``GIT_WORK_TREE``, ``GIT_DIR`` and the like: git would then work elsewhere than coord asks.

Stdlib only; git runs only for commands that rewrite the tree while others hold files.
"""

from __future__ import annotations

import os
import re

from coord.errors import InvalidInput
from coord.fast import guard, holds, targets
from coord.hooks.git_options import Unsure, read_call
from coord.times import clock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.hooks.git_options import Call
    from coord.hooks.git_oracle import Found, Reach

# git's environment that moves its repository, tree, index or settings, or names a program
# (text until first used: compiling it costs more than the everyday `git status` path)
_GIT_ENVIRONMENT = (
    r"\b(GIT_(?:DIR|WORK_TREE|INDEX_FILE|COMMON_DIR|OBJECT_DIRECTORY|NAMESPACE|CONFIG\w*|"
    r"EXEC_PATH|EXTERNAL_DIFF|EDITOR|SEQUENCE_EDITOR|PAGER|SSH\w*|ASKPASS|PROXY_COMMAND))"
    r"=(['\"]?)([^\s'\";&|]*)"
)
# the programs agents name to keep git from waiting on a person: they change no file
_QUIET_PROGRAMS = frozenset({"", "true", ":", "cat", "less", "more"})
_PROGRAM_VARIABLES = frozenset({"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_PAGER"})


def _git_environment(command: str) -> str | None:
    """The git variable ``command`` sets that could change what a git command does to
    files (``GIT_WORK_TREE=docs``, ``GIT_DIR=...``, ``GIT_EXTERNAL_DIFF=CMD``); None if none
    (``GIT_EDITOR=true`` and ``GIT_PAGER=cat`` are fine)."""
    if "GIT_" not in command:
        return None
    for found in re.finditer(_GIT_ENVIRONMENT, command):
        name, value = found.group(1), found.group(3)
        if name in _PROGRAM_VARIABLES and value in _QUIET_PROGRAMS:
            continue
        return name
    return None


_SHOWN_FILES = 3  # files named per refusal line; the rest are counted
_SHOWN_LINES = 10  # holds named per refusal; the rest are counted
# past this many (files x holds) pairs the files are first narrowed to those a hold is near
_NARROW_FROM = 20_000


def refusal(
    args: list[str],
    where: str,
    home: str | None,
    agent: str | None,
    command: str = "",
    earlier: dict[str, Found] | None = None,
) -> str | None:
    """Why ``agent`` may not run ``git ARGS`` in ``where``; None allows. ``home``: the board
    found from where the agent stands (None: none); ``command``: the whole command line, for
    the git environment it sets (``GIT_WORK_TREE=docs git checkout -f``); ``earlier``: what
    the git commands before it on that line stashed, by working tree (this call adds to it)."""
    call = read_call(args, where)
    setting = call.program_setting()
    environment = _git_environment(command)
    if call.reads_only() and setting is None and environment is None:
        return None  # git status, log, commit...: nothing to ask, nothing more to import
    from coord.hooks import git_oracle, git_reach

    tree = os.path.realpath(git_oracle.top(call))
    if earlier is not None:
        call.stashed = earlier.get(tree)
    plan: Reach | None = None
    unsure: str | None = None
    try:
        plan = git_reach.reach(call)
    except Unsure as err:
        unsure = str(err)
    if setting is not None:  # even `git -c core.fsmonitor=CMD status` runs CMD
        plan, unsure = None, f"`-c {setting}=...` can make git run a program coord cannot read"
    if environment is not None:  # another tree, index or config than the one coord asks about
        plan, unsure = None, f"it sets {environment} for git"
    if plan is None and unsure is None:
        return None
    root = git_oracle.top(call)
    if not os.path.isdir(call.cwd):  # `cd "$X" && git stash`: the shell knows where, not coord
        if home is None:
            return None
        root, plan, unsure = os.path.dirname(home), None, "coord cannot tell where it runs"
    try:
        held = _held_here(root, home, agent)
    except holds.BoardUnreadable as err:
        return f"coord: cannot check the board ({err}); refusing the command"
    if not held:
        return None
    here = os.path.realpath(root)
    for r in held:  # it runs in a worktree the agent may not write: whatever it would change
        if guard.is_worktree(r) and r.root == here:
            return f"coord: `{call.shown}` rewrites the working tree {root}: {r.why}; refusing it"
    if plan is not None:
        try:
            found = plan.find()
        except Unsure as err:
            unsure = str(err)
        else:
            try:
                why = _judged(call, plan, found, root, home, agent, held)
            except holds.BoardUnreadable as err:
                return f"coord: cannot check the board ({err}); refusing the command"
            if why is None and plan.stashes and found and earlier is not None:
                earlier[tree] = found  # a stash is made: a later `stash pop` applies it
            return why
    return _unsure_line(call, unsure or "", held)


def _held_here(root: str, home: str | None, agent: str | None) -> list[holds.Held]:
    """Other agents' live exclusive holds on the board of the working tree at ``root``."""
    spots = [root]
    if home is not None:  # a board in a directory beneath the git working tree's top
        repo, real_root = os.path.realpath(os.path.dirname(home)), os.path.realpath(root)
        if repo.startswith(real_root.rstrip("/") + "/"):
            spots.append(repo)
    placed = []
    for spot in spots:
        try:
            target = targets.place(spot, spot, home, shell=True)
        except InvalidInput:
            continue
        if target is not None:
            placed.append(target)
    if not placed:
        return []
    unique: dict[int, holds.Held] = {}
    # and the worktrees nested in the tree that the agent may not write (`git clean -ffdx`
    # removes them): then git is asked what it would change, and a directory it names there
    # is judged below
    for _, blocking in guard.judge(placed, agent, beneath=placed):
        for r in blocking:
            unique.setdefault(r.id, r)
    return list(unique.values())


def _judged(
    call: Call,
    plan: Reach,
    found: Found,
    root: str,
    home: str | None,
    agent: str | None,
    held: list[holds.Held],
) -> str | None:
    if len(found) * len(held) > _NARROW_FROM:
        found = _near_a_hold(found, root, home, held)
    placed: dict[tuple[str, str], targets.Target] = {}
    for path, is_dir in found:
        try:
            target = targets.place(path, root, home, shell=is_dir)
        except InvalidInput:
            continue  # what coord never lets anyone hold (.git/...)
        if target is not None:
            placed.setdefault((target.board_dir, target.name), target)
    chosen = list(placed.values())
    by_hold: dict[int, tuple[holds.Held, list[str]]] = {}
    directories = [t for t in chosen if not t.one_file]  # beneath them: nested worktrees
    for target, blocking in guard.judge(chosen, agent, beneath=directories):
        for r in blocking:
            by_hold.setdefault(r.id, (r, []))[1].append(target.name)
    lines = []
    for r, names in by_hold.values():
        names.sort()
        shown = ", ".join(names[:_SHOWN_FILES])
        if len(names) > _SHOWN_FILES:
            shown += f" and {len(names) - _SHOWN_FILES} more"
        if guard.is_worktree(r):
            lines.append(f"coord: `{call.shown}` {plan.verb} {shown}: {r.why}; refusing it")
            continue
        item = f" for item {r.item_id}" if r.item_id is not None else ""
        lines.append(
            f"coord: `{call.shown}` {plan.verb} {shown}, and {r.agent} holds {r.pattern}{item} "
            f"until {clock(r.expires_at)}; {plan.instead} {r.agent}"
        )
    if len(lines) > _SHOWN_LINES:  # one line per hold: a whole tree would be thousands
        more = len(lines) - _SHOWN_LINES
        lines[_SHOWN_LINES:] = [f"coord: and {more} more held files `{call.shown}` would touch"]
    return "\n".join(lines) or None


def _near_a_hold(found: Found, root: str, home: str | None, held: list[holds.Held]) -> Found:
    """The paths a hold could cover, before each is placed (``git rm -r .`` names every
    tracked file): those whose repository path has a hold's literal prefix on it or beneath
    it (the board's own narrowing, ``coord.fast.prefix_index``), those outside the tree, and
    linked files (a hard link is judged by its other names too). git names the paths it
    changes as they are in the tree, never through a symlink, so no path is resolved."""
    from coord.fast.prefix_index import PrefixIndex

    index = PrefixIndex((r.pattern, r) for r in held)
    base = os.path.realpath(root)
    if home is not None:  # a board in a directory beneath the git working tree's top
        repo = os.path.realpath(os.path.dirname(home))
        base = repo if repo.startswith(base.rstrip("/") + "/") else base
    real_dirs: dict[str, str] = {}
    kept = []
    for path, is_dir in found:
        parent, name = os.path.split(path)
        if parent not in real_dirs:
            real_dirs[parent] = os.path.realpath(parent)
        rel = os.path.relpath(os.path.join(real_dirs[parent], name), base)
        if rel.startswith("..") or index.near(rel) or (not is_dir and _linked(path)):
            kept.append((path, is_dir))
    return kept


def _linked(path: str) -> bool:
    try:
        return os.lstat(path).st_nlink > 1
    except OSError:
        return False


def _unsure_line(call: Call, why: str, held: list[holds.Held]) -> str:
    agents: dict[str, list[str]] = {}
    for r in held:
        agents.setdefault(r.agent, []).append(r.pattern)
    said = []
    for name, patterns in agents.items():
        shown = ", ".join(patterns[:_SHOWN_FILES])
        if len(patterns) > _SHOWN_FILES:
            shown += f" and {len(patterns) - _SHOWN_FILES} more"
        said.append(f"{name} holds {shown}")
    who = " and ".join(agents)
    return (
        f"coord: cannot tell which files `{call.shown}` would change ({why}), while "
        f"{'; '.join(said)} in this working tree; refusing it: run git commands that name only "
        f"your own files, or ask {who}"
    )
