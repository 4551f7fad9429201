"""Which files a shell command would write, and whether it skips coord's pre-commit guard.

A best-effort reading of the command text, for the hooks that run before an agent's ``Bash``
tool: it catches the common ways of writing a file from a shell, not every way. The syntax
(separators, quotes, heredocs, redirections) is ``coord.hooks.shell_syntax``'s; this module
knows what the commands do. What it reads:

- redirections: ``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<>`` and ``>&`` to a path (not to a
  descriptor like ``2>&1``); paths in no coord repository (``/dev/null``, ``/tmp/x``) are
  left alone, as for an edit tool (``coord.fast.targets``);
- ``tee``, ``touch``, ``truncate``, ``rm``, ``rmdir``, ``unlink``, ``shred``: their operands;
- ``mv``: every operand (the sources disappear, the destination is written); ``cp``, ``install``
  and ``ln``: the destination (``DIR/name`` of each source when it is a directory, or ``-t DIR``),
  and the sources of a hard link (``ln`` without ``-s``, ``cp -l``): the link makes the source
  writable under another name;
- ``sed -i`` / ``perl -i``: the files after the script; ``dd of=FILE``;
- ``git commit --no-verify`` / ``-n`` (also ``-anm msg``, abbreviations like ``--no-veri``) and
  ``git -c core.hooksPath=... commit``: they would skip coord's pre-commit guard;
- the commands inside ``bash -c '...'`` / ``sh -c``, ``$(...)``, backticks and ``( ... )``;
  ``;``, ``&&``, ``||``, ``|``, ``&`` and newlines separate commands; ``cd DIR`` moves the
  directory later relative paths are read from; heredoc bodies are data, not commands; an
  ``apply_patch`` heredoc (``*** Update File: ...``) is read as a patch;
- wrappers before the command: ``VAR=value``, ``sudo``, ``env``, ``command``, ``nohup``,
  ``time``, ``nice``, ``timeout``, ``exec``, ``stdbuf``, ``doas``.

Its limits (what it does not see, so does not refuse): writes by programs it does not know
(``python -c``, ``npm``, formatters, ``patch``, ``find -delete``,
``xargs rm``), targets named through variables or substitutions (``> $OUT``), ``$(...)``
inside double quotes, ``eval``, shell functions and aliases (a ``git ci`` alias), ``cd`` to
anything but a plain path, and ``git`` options given through the environment. A quoted
operator (``echo ">" f``) reads as a redirection. Globs are judged as patterns, so ``rm *.py``
is refused if another agent holds any ``.py`` file in that directory. It is a guard rail
against accidents, not a sandbox: coord's pre-commit guard (``coord guard --staged``) is the
check that does not depend on parsing.

Stdlib only; no board access here (``coord.hooks.shell_guard`` judges the targets).
"""

from __future__ import annotations

import os
import re

from coord.hooks import patch, shell_syntax

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")

# command words that run the next word as the command; the options that take a value
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-R", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
}
_COPY_VALUE = frozenset({"-S", "-t", "--suffix", "--target-directory"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_REMOVERS = frozenset({"rm", "rmdir", "unlink", "shred"})
_MAX_DEPTH = 4


class Writes:
    """What a command would do to files: ``targets`` as (path as written, directory it is
    relative to); ``bypass``: why it would skip coord's pre-commit guard; ``removed``: the
    targets that ``rm`` and its kin delete, with all beneath them; ``git``: each ``git``
    command's arguments and directory (``coord.hooks.shell_guard`` reads ``git clean``)."""

    __slots__ = ("bypass", "git", "removed", "targets")

    def __init__(self) -> None:
        self.targets: list[tuple[str, str]] = []
        self.bypass: list[str] = []
        self.removed: list[tuple[str, str]] = []
        self.git: list[tuple[list[str], str]] = []


def analyse(command: str, cwd: str) -> Writes:
    """The files ``command`` would write when run in ``cwd``, and any guard bypass."""
    found = Writes()
    _analyse(command, cwd, found, 0)
    return found


def _analyse(command: str, cwd: str, found: Writes, depth: int) -> None:
    if "*** Begin Patch" in command:  # an apply_patch heredoc: the patch names its files
        found.targets += [(p, cwd) for p in patch.paths(command)]
    for words, redirects in shell_syntax.commands(command):
        found.targets += [(t, cwd) for t in redirects]
        cwd = _command(words, cwd, found, depth)


def _command(words: list[str], cwd: str, found: Writes, depth: int) -> str:
    """Record what one simple command writes; returns the directory after it (``cd``)."""
    i = 0
    while i < len(words):
        word = words[i]
        name = os.path.basename(word)
        if _ASSIGNMENT.match(word):
            i += 1
        elif name in _WRAPPERS:
            i = _skip_options(words, i + 1, _WRAPPERS[name], assignments=name == "env")
            if name == "timeout" and i < len(words):
                i += 1  # the duration
        else:
            break
    if i >= len(words):
        return cwd
    name, args = os.path.basename(words[i]), words[i + 1 :]
    if name == "cd":
        operands = [a for a in args if not a.startswith("-")]
        if len(operands) == 1 and not set(operands[0]) & set("$`~*?"):
            return os.path.normpath(os.path.join(cwd, operands[0]))
        return cwd
    targets: list[str] = []
    if name in _REMOVERS or name == "tee":
        targets = _operands(args, frozenset())
        if name in _REMOVERS:
            found.removed += [(t, cwd) for t in targets]
    elif name == "touch":
        targets = _operands(args, frozenset({"-d", "-t", "-r", "--date", "--reference"}))
    elif name == "truncate":
        targets = _operands(args, frozenset({"-s", "-r", "--size", "--reference"}))
    elif name == "mv":
        targets = _operands(args, _COPY_VALUE) + _option_values(args, ("-t", "--target-directory"))
    elif name in ("cp", "ln"):
        targets = _destinations(args, _COPY_VALUE, cwd)
        if _hard_links(name, args):
            # a hard link is the source under another name, writable there: making one
            # writes the source (a symbolic link resolves back to it, so is judged there)
            sources = _operands(args, _COPY_VALUE)
            into = _option_values(args, ("-t", "--target-directory"))
            targets += sources if into else sources[:-1]
    elif name == "install":
        takes = _COPY_VALUE | {"-m", "-o", "-g", "--mode", "--owner", "--group"}
        if "-d" in args or "--directory" in args:
            targets = _operands(args, takes)  # the directories it creates
        else:
            targets = _destinations(args, takes, cwd)
    elif name in ("sed", "perl"):
        targets = _in_place(name, args)
    elif name == "dd":
        targets = [a[3:] for a in args if a.startswith("of=")]
    elif name == "git":
        found.git.append((args, cwd))
        _git(args, found)
    elif name in _SHELLS and depth < _MAX_DEPTH:
        script = _shell_script(args)
        if script is not None:
            _analyse(script, cwd, found, depth + 1)
    found.targets += [(t, cwd) for t in targets]
    return cwd


def _skip_options(words: list[str], i: int, takes: frozenset[str], *, assignments: bool) -> int:
    while i < len(words):
        word = words[i]
        if word == "--":
            return i + 1
        if word in takes:
            i += 2
        elif (word.startswith("-") and word != "-") or (assignments and _ASSIGNMENT.match(word)):
            i += 1
        else:
            break
    return i


def _operands(args: list[str], takes: frozenset[str]) -> list[str]:
    """The arguments that are not options (nor an option's value); all of them after --."""
    found: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            found += list(rest)
        elif arg in takes:
            next(rest, None)
        elif not arg.startswith("-") or arg == "-":
            found.append(arg)
    return [a for a in found if a != "-"]


def _option_values(args: list[str], names: tuple[str, ...]) -> list[str]:
    """Values of these options, given as ``-t DIR``, ``-tDIR`` or ``--target-directory=DIR``."""
    found: list[str] = []
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                found.append(args[i + 1])
            elif name.startswith("--") and arg.startswith(name + "="):
                found.append(arg[len(name) + 1 :])
            elif not name.startswith("--") and arg.startswith(name) and len(arg) > len(name):
                found.append(arg[len(name) :])
    return found


def _shell_script(args: list[str]) -> str | None:
    """The command string of ``bash -c 'CMD'`` (also ``-lc``, ``-ec``...)."""
    expecting = False
    for arg in args:
        if arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
            expecting = expecting or "c" in arg[1:]
        elif arg.startswith("--"):
            continue
        elif expecting:
            return arg
        else:
            return None  # a script file: not read
    return None


def _destinations(args: list[str], takes: frozenset[str], cwd: str) -> list[str]:
    """What cp/install/ln write: the destination, or DIR/name for each source."""
    operands = _operands(args, takes)
    target_dir = _option_values(args, ("-t", "--target-directory"))
    if target_dir:
        sources, directory = operands, target_dir[-1]
    elif len(operands) >= 2:
        sources, dest = operands[:-1], operands[-1]
        into = (
            "-T" not in args
            and "--no-target-directory" not in args
            and (len(sources) > 1 or dest.endswith("/") or os.path.isdir(os.path.join(cwd, dest)))
        )
        if not into:
            return [dest]
        directory = dest
    else:
        return []
    names = [os.path.basename(s.rstrip("/")) for s in sources]
    return [os.path.join(directory, n) for n in names if n] or [directory]


def _hard_links(name: str, args: list[str]) -> bool:
    """Does this ``ln`` (not ``-s``) or ``cp -l`` / ``--link`` make hard links?"""
    short = "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--"))
    if name == "ln":
        return "s" not in short and "--symbolic" not in args
    return "l" in short or "--link" in args


def _in_place(name: str, args: list[str]) -> list[str]:
    """The files ``sed -i`` / ``perl -i`` rewrite: the operands after the script."""
    in_place = False
    script_given = False
    operands: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            operands += list(rest)
        elif arg.startswith("--"):
            in_place = in_place or arg == "--in-place" or arg.startswith("--in-place=")
            if arg in ("--expression", "--file", "--line-length"):
                next(rest, None)
            script_given = script_given or arg.startswith(("--expression", "--file"))
        elif arg.startswith("-") and arg != "-":
            cluster = arg[1:]
            for k, letter in enumerate(cluster):
                if letter == "i":
                    in_place = True
                    break  # the rest of the cluster is the backup suffix
                if letter in ("ef" if name == "sed" else "eE") or (name == "sed" and letter == "l"):
                    script_given = script_given or letter != "l"
                    if k == len(cluster) - 1:
                        next(rest, None)
                    break
                if name == "perl" and letter in "MmIlx0":
                    break  # its value is attached
        else:
            operands.append(arg)
    if not in_place:
        return []
    return operands if script_given else operands[1:]


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


def _git(args: list[str], found: Writes) -> None:
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
