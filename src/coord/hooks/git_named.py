"""What git's commands that write the paths and trees they name could change: worktree,
submodule, clone, merge-file, mergetool, a ``git config`` of a setting that runs a program, and
a reader's ``--output`` (``coord.hooks.git_reach`` says how each is judged). Stdlib only."""

from __future__ import annotations

import os

from coord.hooks.git_options import Call, Spec, Unsure, parse, runs_a_program
from coord.hooks.git_oracle import ASK, Reach, git, here, names, status, top, unread

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.hooks.git_oracle import Found

_WORKTREE_ADD = Spec(
    "f|force d|detach checkout lock reason= q|quiet track guess-remote orphan b= B="
)
_WORKTREE_REMOVE = Spec("f|force")


def worktrees(call: Call) -> Reach | None:
    sub, rest = (call.args[0], call.args[1:]) if call.args else ("list", [])
    unread(rest)
    if sub in ("remove", "move"):
        parsed = parse(rest, _WORKTREE_REMOVE)
        if not parsed.operands:
            return None
        other = Call(os.path.join(call.cwd, parsed.operands[0]))

        def uncommitted() -> Found:  # committed files are in git; these are lost with it
            return status(other, [], untracked=True, ignored=True)

        verb = "would delete" if sub == "remove" else "would move away"
        instead = "remove only a worktree whose uncommitted files are yours"
        return Reach(verb, f"{instead}, {ASK}", uncommitted)
    if sub == "add":
        parsed = parse(rest, _WORKTREE_ADD)
        if parsed.operands:
            path = parsed.operands[0]
            return Reach(
                "would write into", f"add it elsewhere, {ASK}", lambda: here(path, call, True)
            )
    return None


_SUBMODULE_VALUE = frozenset(
    {"--reference", "--depth", "--jobs", "-j", "--filter", "-b", "--branch", "--name"}
)


def submodule(call: Call) -> Reach | None:
    args = [a for a in call.args if a != "--quiet" and a != "-q"]
    sub, rest = (args[0], args[1:]) if args else ("status", [])
    unread(rest)
    if sub not in ("update", "deinit", "foreach", "add"):
        return None
    if sub == "foreach":
        raise Unsure("it runs a command in every submodule")
    operands, skip = [], False
    for arg in rest:
        if skip:
            skip = False
        elif arg in _SUBMODULE_VALUE:
            skip = True
        elif not arg.startswith("-"):
            operands.append(arg)
    if sub == "add":  # add URL [PATH]: the directory it clones into
        if not operands:
            return None
        path = operands[1] if len(operands) > 1 else _cloned_name(operands[0])
        return Reach("would write into", f"add it elsewhere, {ASK}", lambda: here(path, call, True))

    def checked_out() -> Found:
        if operands:
            return [entry for p in operands for entry in here(p, call, True)]
        return [(os.path.join(top(call), p), True) for p in _submodule_paths(top(call))]

    return Reach(
        "would check out", f"name only submodules nobody holds files in, {ASK}", checked_out
    )


def _submodule_paths(root: str) -> list[str]:
    """The submodules' paths, from ``.gitmodules`` (none without one)."""
    try:
        with open(os.path.join(root, ".gitmodules"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError):
        raise Unsure("coord cannot read .gitmodules") from None
    paths = []
    for line in lines:
        key, eq, value = line.strip().partition("=")
        if eq and key.strip() == "path":
            paths.append(value.strip().strip('"'))
    return paths


def _cloned_name(url: str) -> str:
    """The directory ``git clone URL`` makes: the URL's last name without ``.git``."""
    name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return name[:-4] if name.endswith(".git") else name


_CLONE_VALUE = frozenset(
    """-o --origin -b --branch -u --upload-pack --reference --reference-if-able
    --separate-git-dir --depth --shallow-since --shallow-exclude -c --config
    --server-option -j --jobs --template --filter --bundle-uri""".split()  # noqa: SIM905
)


def clone(call: Call) -> Reach | None:
    unread(call.args)
    operands, skip = [], False
    for arg in call.args:
        if skip:
            skip = False
        elif arg in _CLONE_VALUE:
            skip = True
        elif not arg.startswith("-"):
            operands.append(arg)
    if not operands:
        return None
    path = operands[1] if len(operands) > 1 else _cloned_name(operands[0])
    return Reach("would write into", f"clone it elsewhere, {ASK}", lambda: here(path, call, True))


def merge_file(call: Call) -> Reach | None:
    unread(call.args)
    operands, skip = [], False
    for arg in call.args:
        if skip:
            skip = False
        elif arg == "-L":
            skip = True
        elif arg in ("-p", "--stdout"):
            return None
        elif not arg.startswith("-"):
            operands.append(arg)
    if not operands:
        return None
    return Reach(
        "would write",
        f"merge into your own files, {ASK}",
        lambda: here(operands[0], call, False),
    )


def mergetool(call: Call) -> Reach | None:
    unread(call.args)
    paths = [a for a in call.args if not a.startswith("-")]

    def resolved() -> Found:  # the files in conflict, and the .orig copies it keeps
        args = ["diff", "--name-only", "-z", "--no-relative", "--diff-filter=U", "--", *paths]
        found = names(git(call, *args), top(call))
        return found + [(p + ".orig", False) for p, _ in found]

    return Reach("would write", f"resolve only your own files, {ASK}", resolved)


_CONFIG_VALUE = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment"})
_CONFIG_READS = ("--get", "--list", "--unset", "--remove-section", "--rename-section", "-l")


def config(call: Call) -> Reach | None:
    """``git config KEY VALUE`` changes no file of the tree, but a key under which git runs a
    program (``core.fsmonitor``, ``core.hooksPath``, a filter) makes the next git command run
    it: ``Unsure``, as ``-c KEY=VALUE`` is."""
    args = call.args
    if "-e" in args or "--edit" in args:
        raise Unsure("it opens an editor on git's settings")
    if any(a.startswith(_CONFIG_READS) for a in args):
        return None
    operands, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in _CONFIG_VALUE:
            skip = True
        elif not arg.startswith("-"):
            operands.append(arg)
    if operands[:1] == ["set"]:  # git 2.46's `git config set KEY VALUE`
        operands = operands[1:]
    if len(operands) >= 2 and runs_a_program(operands[0], operands[1]):
        raise Unsure(f"`git config {operands[0]}` can make git run a program coord cannot read")
    return None


def output(call: Call) -> Reach | None:
    """A reader's ``--output=FILE`` (``archive -o FILE``, ``bundle create FILE``): that file."""
    args, written = call.args, []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg.startswith("--output="):
            written.append(arg[len("--output=") :])
        elif arg == "--output" or (arg == "-o" and call.sub == "archive"):
            written += args[i + 1 : i + 2]
        elif arg.startswith("-o") and len(arg) > 2 and call.sub == "archive":
            written.append(arg[2:])
    if call.sub == "bundle" and args[:1] == ["create"] and len(args) > 1:
        written += [a for a in args[1:] if not a.startswith("-")][:1]
    if not written:
        return None
    unread(written)
    return Reach(
        "would write",
        f"write it elsewhere, {ASK}",
        lambda: [entry for w in written for entry in here(w, call, False)],
    )
