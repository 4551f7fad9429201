"""The git commands that would skip coord's pre-commit guard: ``git commit --no-verify`` /
``-n`` (also ``-anm msg``, abbreviations like ``--no-veri``) and ``git -c
core.hooksPath=... commit``. ``coord.hooks.shell`` hands each ``git`` command's arguments here.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.hooks.shell_writes import Writes


# git's global options that take the next word as their value
_GIT_GLOBAL_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
)
# git commit's options that take a value: as the rest of a short cluster, or the next word
_COMMIT_SHORT_VALUE = frozenset("mFCct")
_COMMIT_SHORT_ATTACHED = frozenset("Su")  # optional value, attached only
_COMMIT_LONG_VALUE = frozenset(
    {
        "--message",
        "--file",
        "--author",
        "--date",
        "--reuse-message",
        "--reedit-message",
        "--fixup",
        "--squash",
        "--template",
        "--cleanup",
        "--trailer",
        "--pathspec-from-file",
    }
)


def check(args: list[str], found: Writes) -> None:
    """Record on ``found.bypass`` why ``git ARGS`` would skip the pre-commit guard."""
    i = 0
    hooks_path = False
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg in _GIT_GLOBAL_VALUE and i + 1 < len(args):
            value = args[i + 1]
            if arg == "-c" and value.lower().startswith("core.hookspath="):
                hooks_path = True
            i += 2
        else:
            if arg.lower().startswith("-ccore.hookspath="):
                hooks_path = True
            i += 1
    if i >= len(args) or args[i] != "commit":
        return
    if hooks_path:
        found.bypass.append("git -c core.hooksPath=... commit")
    rest = iter(args[i + 1 :])
    for arg in rest:
        if arg == "--":
            return
        if arg.startswith("--"):
            if len(arg) >= len("--no-veri") and "--no-verify".startswith(arg):
                found.bypass.append(f"git commit {arg}")
            elif arg in _COMMIT_LONG_VALUE:
                next(rest, None)
        elif arg.startswith("-") and arg != "-":
            cluster = arg[1:]
            for k, letter in enumerate(cluster):
                if letter == "n":
                    found.bypass.append(f"git commit {arg}")
                    break
                if letter in _COMMIT_SHORT_VALUE:
                    if k == len(cluster) - 1:
                        next(rest, None)
                    break
                if letter in _COMMIT_SHORT_ATTACHED:
                    break
