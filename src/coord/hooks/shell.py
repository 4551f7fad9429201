"""Which files a shell command would write, and whether it skips coord's pre-commit guard.

A best-effort reading of the command text, for the hooks that run before an agent's ``Bash``
tool. The syntax (separators, quotes, heredocs, redirections) is ``coord.hooks.shell_syntax``'s
and the keywords ``coord.hooks.shell_compound``'s; the programs it knows are in
``coord.hooks.shell_programs``, ``shell_writers``, ``shell_rewriters`` and ``shell_archives``,
the commands that run commands in ``shell_runs`` (and ``shell_make``), the commits that skip
the guard in ``shell_bypass``; words are expanded by ``shell_words``; what it finds is a
``shell_writes.Writes``. What it reads:

- redirections: ``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<>`` and ``>&`` to a path;
- the commands inside ``if``/``for``/``while``/``until``/``case``, ``{ …; }``, ``( … )``,
  ``!``, ``coproc``, function bodies, ``$( … )`` and backticks (inside double quotes too),
  ``bash -c`` and the other shells (with options before ``-c``: ``bash -eu -o pipefail -c``),
  a script fed to a shell on stdin (``bash <<< 'CMD'``, ``bash -s <<EOF``, ``echo CMD |
  bash``), a shell script run (``bash x.sh``, ``./x.sh``, ``source x``) when it can be read,
  ``eval`` of literal text;
- ``cd``, ``pushd``, ``popd``, ``env -C DIR``: the directory later relative paths are read
  from (a ``cd`` inside ``( … )`` ends there); variables assigned in the command (``f=x; rm
  $f``), ``for f in …`` loops, and the environment's (``$HOME``); brace expansion
  (``src/{a,b}.py``, ``a.p{y,}``);
- wrappers that run the next command (``sudo``, ``env``, ``nice``, ``timeout``, ``flock``,
  ``setsid``, ``taskset``, ``ionice``, ``chrt``, ``strace``, …, ``shell_programs.WRAPPERS``),
  and the ones that run a string (``su -c``, ``runuser -c``, ``script -c``, ``watch``) or
  add operands (``xargs``, ``parallel``, ``find -exec``);
- the programs that write (``shell_writers.WRITERS``: ``rm``, ``cp``, ``mv``, ``sed -i``,
  ``perl -i``, ``rsync``, ``tar x``, ``unzip``, ``curl -o``, ``wget``, ``sort -o``,
  ``gzip``, ``chmod``, editors, …, ``find -delete``, ``awk -i inplace``, ``patch``);
- ``git commit --no-verify`` / ``-n`` and ``git -c core.hooksPath=... commit``: they would
  skip coord's pre-commit guard.

What it cannot read it records as *unread* with what it could reach, and
``coord.hooks.shell_guard`` refuses it when another agent holds a file there: a target named
through a variable or substitution it cannot know (``> $OUT``: the directory before the
``$``, or the whole working tree), ``eval`` of such text, a script it cannot read or an
interpreter's script file (``python x.py``), a runner of a build's or a package's code
(``make``, ``npm run``, ``shell_programs.RUNNERS``) save ``shell_programs.LET_THROUGH``, an
interpreter's ``-c``/``-e`` code that calls anything able to write (judged by the paths its
string literals name), and a program it does not know (judged by its operands, as paths
that reach all beneath). Readers (``cat``, ``grep``, ``ls``, …, ``shell_programs.READERS``)
write only their redirections.
A git command that rewrites the working tree is judged by ``coord.hooks.git_rewrites``.

Let through unread (``shell_programs.LET_THROUGH``, with any options and operands; the
docs/files-and-the-guard.md says the same, and tests/hooks/test_shell_limits.py holds both to it):
``pytest``, ``python -m pytest``, ``make test``, ``make check``, ``make -n``, ``npm test``,
``yarn test``, ``pnpm test``, ``cargo test``, ``go test``. Beyond them only a program it does
not know whose operands reach no held file, and interpreter code that calls nothing able to
write or whose strings name no held file, are allowed unread.
Past ``MAX_COMMAND`` characters, ``MAX_SIMPLE_COMMANDS`` simple commands or ``MAX_PATHS``
paths it judges nothing and says so (``too_big``): the guard refuses.

It is a guard rail against accidents, not a sandbox: coord's pre-commit guard (``coord guard
--staged``) is the check that does not depend on parsing. Stdlib only; no board access here.
"""

from __future__ import annotations

import os
import re

from coord.hooks import (
    patch,
    shell_bypass,
    shell_compound,
    shell_programs,
    shell_rewriters,
    shell_runs,
    shell_syntax,
    shell_writers,
)
from coord.hooks.shell_compound import Loop
from coord.hooks.shell_options import letters
from coord.hooks.shell_writers import WRITERS
from coord.hooks.shell_writes import Writes

__all__ = ["Writes", "analyse"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.hooks.shell_syntax import Simple

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_MAX_DEPTH = 4
MAX_COMMAND = 64 * 1024  # characters of one command line the guard reads
# past these the guard judges nothing and refuses: each simple command and each path costs
# a reading and a placement on the tree (~0.2-1 ms on a busy machine), and the guard runs
# before every shell command (a 729 KB command of 20,001 cp's took 22-33 s unbounded)
MAX_SIMPLE_COMMANDS = 1_000
MAX_PATHS = 1_000
WHOLE_TREE = shell_programs.WHOLE_TREE
UNKNOWN_DIR = shell_programs.UNKNOWN_DIR
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_RUNNER_HARMLESS = frozenset({"--version", "-v", "-V", "--help", "-h", "help", "version"})


def analyse(command: str, cwd: str) -> Writes:
    """The files ``command`` would write when run in ``cwd``, and any guard bypass."""
    found = Writes()
    if len(command) > MAX_COMMAND:
        found.too_big = (
            f"this command is {len(command):,} characters long, past the guard's limit of "
            f"{MAX_COMMAND:,}; write large files with the edit tool, or split the command"
        )
        return found
    reader = _Reader(found)
    reader.run(command, cwd, 0)
    if reader.simple_commands > MAX_SIMPLE_COMMANDS:
        found.too_big = (
            f"this command runs more than {MAX_SIMPLE_COMMANDS:,} simple commands, the "
            "guard's limit; split it into smaller commands"
        )
    elif len(found.targets) + len(found.unread) > MAX_PATHS:
        found.too_big = (
            f"this command names {len(found.targets) + len(found.unread):,} paths to write "
            f"or reach, past the guard's limit of {MAX_PATHS:,}; split it into smaller commands"
        )
    return found


class _Reader(shell_runs.Runs):
    """One command line read through, with the state the shell keeps between its simple
    commands: the directory, the variables, the ``pushd`` stack."""

    def __init__(self, found: Writes) -> None:
        self.found = found
        self.variables: dict[str, list[str] | None] = {}
        self.simple_commands = 0
        self.last: tuple[list[str], Simple] | None = None  # the command before a pipe
        self.oldpwd = UNKNOWN_DIR

    def run(self, text: str, cwd: str, depth: int) -> str:
        """Read ``text`` run in ``cwd``; the directory after it."""
        if depth > _MAX_DEPTH:
            self.found.reach(WHOLE_TREE, cwd, "this command nests shells too deep to read")
            return cwd
        if "*** Begin Patch" in text:  # an apply_patch heredoc: the patch names its files
            for p in patch.paths(text):
                self.found.write(p, cwd)
        opened: list[str] = []  # the directory at each '(' (a subshell's cd ends with it)
        stack: list[str] = []  # pushd's
        piped = False
        for item in shell_compound.commands(text):
            if isinstance(item, str):
                if item == "(":
                    opened.append(cwd)
                elif item == ")":
                    cwd = opened.pop() if opened else cwd
                else:
                    piped = True
                continue
            if isinstance(item, Loop):
                self.variables[item.name] = [
                    w for word in item.words for w in self.expand(word, cwd)
                ]
                continue
            self.simple_commands += 1
            if self.simple_commands > MAX_SIMPLE_COMMANDS:
                break
            source = self.last if piped else None
            piped = False
            words = [w for word in item.words for w in self.expand(word, cwd)]
            for raw in item.writes:
                for target in self.expand(raw, cwd):
                    self.found.write(target, cwd)
            self.last = (words, item)
            cwd = self.command(words, cwd, depth, item, source, stack)
        return cwd

    def expand(self, word: str, cwd: str) -> list[str]:
        if "$" not in word and "{" not in word and not word.startswith("~"):
            return [word]
        from coord.hooks import shell_words  # only for words the shell expands

        return shell_words.expand(word, self.variables, cwd)

    def command(
        self,
        words: list[str],
        cwd: str,
        depth: int,
        item: Simple,
        source: tuple[list[str], Simple] | None,
        stack: list[str],
    ) -> str:
        """Record what one simple command writes; returns the directory after it."""
        found = self.found
        if words and all(_ASSIGNMENT.match(w) for w in words):
            self.assign(words)
            return cwd
        i = 0
        while i < len(words):
            word = words[i]
            name = os.path.basename(word)
            if _ASSIGNMENT.match(word):
                i += 1
            elif name == "env":
                i, cwd, split = self.env(words, i + 1, cwd)
                if split is not None:
                    words = words[:i] + split + words[i:]
            elif name in shell_programs.STRING_WRAPPERS and _string_option(words[i + 1 :]):
                self.run(_string_option(words[i + 1 :]) or "", cwd, depth + 1)
                return cwd
            elif name in shell_programs.WRAPPERS:
                takes, before = shell_programs.WRAPPERS[name]
                j = shell_runs.skip_options(words, i + 1, takes)
                rest = words[j + before :]
                if name == "flock" and rest[:1] in (["-c"], ["--command"]) and len(rest) > 1:
                    self.run(rest[1], cwd, depth + 1)
                    return cwd
                if name in ("taskset", "chrt") and "p" in letters(words[i + 1 : j]):
                    return cwd  # it changes a running process: no command
                i = j + before
            else:
                break
        if i >= len(words):
            return cwd
        name, args = os.path.basename(words[i]), words[i + 1 :]
        program = words[i]
        if "$" in program:
            found.reach(WHOLE_TREE, cwd, f"the command's name `{program}` is computed")
            return cwd
        if name == "trap" and args and args[0] not in ("-l", "-p", "-", "--"):
            self.run(args[0], cwd, depth + 1)  # it runs when the shell exits or is signalled
            return cwd
        if name in ("cd", "pushd", "popd"):
            return self.cd(name, args, cwd, stack)
        if name in _DECLARERS:
            self.assign([a for a in args if not a.startswith("-")])
            return cwd
        if name in ("read", "mapfile", "readarray", "getopts", "unset"):
            for a in args:
                if not a.startswith("-"):
                    self.variables[a] = None if name != "unset" else [""]
            return cwd
        if shell_programs.let_through(words[i:]):
            return cwd
        if "/" in program and not program.startswith("/") and not _known(name):
            return self.script(program, args, cwd, depth, f"`{program}` runs a script")
        if name in ("source", "."):
            if not args:
                return cwd
            return self.script(args[0], [], cwd, depth, f"`{name} {args[0]}` runs a script")
        if name == "eval":
            text = " ".join(args)
            if "$" in text:
                found.reach(WHOLE_TREE, cwd, "`eval` runs text the guard cannot know")
            else:
                self.run(text, cwd, depth + 1)
            return cwd
        if name == "git":
            found.git.append((args, cwd))
            shell_bypass.check(args, found)
        elif name in shell_programs.SHELLS:
            self.shell(name, args, cwd, depth, item, source)
        elif name in shell_programs.INTERPRETERS or shell_programs.python_like(name):
            if name in ("perl", "ruby"):  # -i rewrites the files after the code
                WRITERS["perl"](args, cwd, found)
            self.interpreter(name, args, cwd, item, source)
        elif name in ("ed", "red") and not shell_rewriters.ed_writes(
            self.stdin_text(item, source, cwd)
        ):
            pass  # its script, read, has no w: it writes nothing
        elif name in WRITERS:
            shell_writers.writer(name)(args, cwd, found)
        elif name == "find":
            self.find(args, cwd, depth, item)
        elif name == "xargs":
            self.xargs(args, cwd, depth, item, source)
        elif name == "parallel":
            self.parallel(args, cwd, depth, item, source)
        elif name in shell_programs.JOINING_WRAPPERS:
            j = shell_runs.skip_options(words, i + 1, shell_programs.WATCH_VALUE)
            self.run(" ".join(words[j:]), cwd, depth + 1)
        elif name == "patch":
            shell_rewriters.patch_files(args, cwd, found, self.stdin_text(item, source, cwd))
        elif name in ("make", "gmake") and self.make(args, cwd, depth):
            pass  # its Makefile's recipes, read
        elif name in ("npm", "yarn", "pnpm", "bun") and self.package(name, args, cwd, depth):
            pass  # a package.json script, read
        elif name in shell_programs.RUNNERS:
            if not args or not all(a in _RUNNER_HARMLESS for a in args):
                sub = next((a for a in args if not a.startswith("-")), "")
                what = f"{name} {sub}".strip()
                found.reach(WHOLE_TREE, cwd, f"`{what}` runs code the guard does not read")
        elif name == "coord" and args and args[0] in shell_programs.COORD_BOARD_ONLY:
            pass  # the board's verbs: only their redirections write (judged already)
        elif name not in shell_programs.READERS:
            why = f"`{name}` is a program the guard does not know"
            for arg in args:
                value = arg.partition("=")[2] if arg.startswith("-") else arg
                if value and value != "--":
                    found.reach(value, cwd, why)
        return cwd

    def assign(self, words: list[str]) -> None:
        for word in words:
            name, _, value = word.partition("=")
            if not _ASSIGNMENT.match(word):
                continue
            values = self.expand(value, "") if value else [""]
            self.variables[name] = None if any("$" in v for v in values) else values[:1]

    def env(self, words: list[str], i: int, cwd: str) -> tuple[int, str, list[str] | None]:
        """Past ``env``'s options and assignments: (where its command starts, the directory
        it runs in, the words of ``-S STRING``)."""
        while i < len(words):
            word = words[i]
            if word == "--":
                return i + 1, cwd, None
            if word in ("-C", "--chdir") and i + 1 < len(words):
                cwd, i = _chdir(cwd, words[i + 1]), i + 2
            elif word.startswith("--chdir="):
                cwd, i = _chdir(cwd, word.partition("=")[2]), i + 1
            elif word.startswith("-C") and len(word) > 2:
                cwd, i = _chdir(cwd, word[2:]), i + 1
            elif word in ("-S", "--split-string") and i + 1 < len(words):
                return i + 2, cwd, shell_syntax.split_words(words[i + 1])
            elif word.startswith(("--split-string=", "-S")) and len(word) > 2:
                text = word.partition("=")[2] if word.startswith("--") else word[2:]
                return i + 1, cwd, shell_syntax.split_words(text)
            elif word in ("-u", "--unset", "-a", "--argv0"):
                i += 2
            elif (word.startswith("-") and word != "-") or _ASSIGNMENT.match(word):
                i += 1
            else:
                break
        return i, cwd, None

    def cd(self, name: str, args: list[str], cwd: str, stack: list[str]) -> str:
        if name == "popd":
            return stack.pop() if stack else cwd
        targets = [a for a in args if not a.startswith(("-", "+")) or a == "-"]
        if name == "pushd":
            if not targets:
                return cwd
            stack.append(cwd)
        if not targets:
            return os.path.expanduser("~")
        new = self.oldpwd if targets[0] == "-" else _chdir(cwd, targets[0])
        self.oldpwd = cwd
        return new


def _known(name: str) -> bool:
    """A program the guard reads by name wherever it lives (``.venv/bin/python``)."""
    return (
        name in WRITERS
        or name in shell_programs.READERS
        or name in shell_programs.SHELLS
        or name in shell_programs.INTERPRETERS
        or shell_programs.python_like(name)
        or name in shell_programs.RUNNERS
        or name in shell_programs.WRAPPERS
        or name in shell_programs.LET_THROUGH_NAMES
        or name in ("git", "find", "xargs", "env", "awk", "gawk", "patch")
    )


def _string_option(args: list[str]) -> str | None:
    """The command string of ``su -c CMD``, ``script -qc CMD``, ``--command=CMD``."""
    for k, arg in enumerate(args):
        if arg.startswith("--command="):
            return arg.partition("=")[2]
        if arg == "--command" or (
            arg.startswith("-") and not arg.startswith("--") and arg.endswith("c")
        ):
            return args[k + 1] if k + 1 < len(args) else ""
    return None


def _chdir(cwd: str, target: str) -> str:
    """The directory ``cd TARGET`` leads to from ``cwd``; ``UNKNOWN_DIR`` when the guard
    cannot know it (a variable, a substitution, a glob, or a relative path from there)."""
    if set(target) & set("$`*?[") or (cwd == UNKNOWN_DIR and not target.startswith("/")):
        return UNKNOWN_DIR
    return os.path.normpath(os.path.join(cwd, target))
