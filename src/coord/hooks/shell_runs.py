"""The commands that run other commands, read through: scripts, shells, interpreters, find,
xargs, parallel (a mixin of ``coord.hooks.shell``'s reader, which records what they write).

A shell given its script as text (``bash -c``, a here-string, a heredoc, ``echo … | bash``)
or as a file the guard can read (``bash x.sh``, ``./x.sh``, ``source x``: at most
``MAX_SCRIPT`` bytes, a shell's ``#!`` or none) is read like the command line. What cannot be
read reaches the whole working tree (``WHOLE_TREE``); an interpreter's ``-c``/``-e`` code is
judged by the paths its string literals name (``Writes.code``).

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

import os

from coord.hooks import shell_programs, shell_syntax
from coord.hooks.shell_programs import MAX_SCRIPT, UNKNOWN_DIR, WHOLE_TREE
from coord.hooks.shell_writers import operands, option_values

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.hooks.shell import Writes
    from coord.hooks.shell_syntax import Simple

# a package manager's own verbs (not the name of a script)
_PACKAGE_VERBS = frozenset(
    {"add", "install", "i", "remove", "rm", "up", "upgrade", "update", "dlx", "exec", "create",
     "init", "link", "unlink", "publish", "pack", "why", "info", "list", "ls", "outdated",
     "config", "cache", "global", "import", "audit", "dedupe", "prune", "patch", "x"}
)  # fmt: skip


class Runs:
    """The reader's methods for commands that run other commands."""

    found: Writes
    variables: dict[str, list[str] | None]

    if TYPE_CHECKING:

        def run(self, text: str, cwd: str, depth: int) -> str: ...

        def command(
            self,
            words: list[str],
            cwd: str,
            depth: int,
            item: Simple,
            source: tuple[list[str], Simple] | None,
            stack: list[str],
        ) -> str: ...

    def script(self, path: str, args: list[str], cwd: str, depth: int, why: str) -> str:
        """A script file run (``bash x.sh``, ``./x.sh``, ``source x``): read it when it is a
        shell script the guard can read, else it reaches the whole working tree."""
        text = read_script(path, cwd)
        if text is None or not is_shell_script(text):
            self.found.reach(WHOLE_TREE, cwd, f"{why} the guard does not read")
            return cwd
        saved = dict(self.variables)
        for k, arg in enumerate(args, 1):
            self.variables[str(k)] = [arg]
        after = self.run(text, cwd, depth + 1)
        self.variables = saved
        return after if why.startswith(("`source", "`.")) else cwd

    def shell(
        self,
        name: str,
        args: list[str],
        cwd: str,
        depth: int,
        item: Simple,
        source: tuple[list[str], Simple] | None,
    ) -> None:
        """``bash [options] -c CMD``, ``bash x.sh``, ``bash -s`` / ``bash`` reading stdin."""
        code = stdin = False
        j = 0
        while j < len(args):
            arg = args[j]
            if arg in shell_programs.SHELL_VALUE:
                j += 2
            elif arg == "--" or arg == "-":
                j += 1
                break
            elif arg.startswith("--"):
                j += 1
            elif arg[:1] in "-+" and len(arg) > 1:
                code = code or "c" in arg[1:]
                stdin = stdin or "s" in arg[1:]
                j += 2 if arg[-1] in "oO" else 1
            else:
                break
        rest = args[j:]
        if code:
            self.run(rest[0] if rest else "", cwd, depth + 1)
        elif rest and not stdin:
            self.script(rest[0], rest[1:], cwd, depth, f"`{name} {rest[0]}` runs a script")
        else:
            text = self.stdin_text(item, source, cwd)
            if text is None:
                self.found.reach(WHOLE_TREE, cwd, f"`{name}` runs a script from its input")
            else:
                self.run(text, cwd, depth + 1)

    def stdin_text(
        self, item: Simple, source: tuple[list[str], Simple] | None, cwd: str
    ) -> str | None:
        """What a command reads on its standard input, when the guard can know it: a
        here-string or heredoc, a file it can read, or the output of ``echo``/``printf``/
        ``cat`` of literal text before a pipe. "" when nothing feeds it; None: unknown."""
        if item.stdin is not None:
            return item.stdin
        if item.stdin_file is not None:
            return read_script(item.stdin_file, cwd)
        if source is None:
            return ""
        return self.piped_text(source)

    def piped_text(self, source: tuple[list[str], Simple] | None) -> str | None:
        if source is None:
            return None
        words, simple = source
        name = os.path.basename(words[0]) if words else ""
        if name == "echo":
            return " ".join(w for w in words[1:] if w not in ("-n", "-e", "-E")) + "\n"
        if name == "printf" and len(words) > 1:
            if words[1] in ("%s\\n", "%s\n"):
                return "".join(w + "\n" for w in words[2:])
            return words[1].replace("\\n", "\n") + " ".join(words[2:]) + "\n"
        if name == "cat" and len(words) == 1 and simple.stdin is not None:
            return simple.stdin
        return None

    def interpreter(
        self,
        name: str,
        args: list[str],
        cwd: str,
        item: Simple,
        source: tuple[list[str], Simple] | None,
    ) -> None:
        """``python -c CODE`` and kin: the paths the code names; a script file: the whole
        tree; ``python -m MODULE ARGS``: its operands, as an unknown program's."""
        found = self.found
        j = 0
        while j < len(args):
            arg = args[j]
            if arg == "--":
                j += 1
                break
            if arg in shell_programs.CODE_OPTIONS or (
                arg.startswith("-")
                and not arg.startswith("--")
                and arg[-1] in "ceEpr"
                and len(arg) > 2
            ):
                code = args[j + 1] if j + 1 < len(args) else ""
                why = f"`{name} {arg}` runs code the guard does not run"
                found.code(code, cwd, why, args[j + 2 :])
                return
            if arg == "-m" and j + 1 < len(args):
                why = f"`{name} -m {args[j + 1]}` runs a module the guard does not read"
                for operand in operands(args[j + 2 :], frozenset()):
                    found.reach(operand, cwd, why)
                return
            if arg in shell_programs.INTERPRETER_VALUE:
                j += 2
            elif arg.startswith("-") and arg != "-":
                j += 1
            else:
                break
        if j < len(args) and args[j] != "-":
            found.reach(
                WHOLE_TREE, cwd, f"`{name} {args[j]}` runs a script the guard does not read"
            )
            return
        text = self.stdin_text(item, source, cwd)
        if text is None:
            found.reach(WHOLE_TREE, cwd, f"`{name}` runs a program from its input")
        else:
            found.code(text, cwd, f"`{name}` runs code from its input the guard does not run")

    def make(self, args: list[str], cwd: str, depth: int) -> bool:
        """``make [-C DIR] [-f FILE] [VAR=value] GOALS``: the recipes its Makefile gives,
        each read as a command run in the Makefile's directory. False: not readable."""
        from coord.hooks import shell_make

        directory, makefile, goals, overrides = cwd, "", [], {}
        rest = iter(args)
        for arg in rest:
            if arg in ("-C", "--directory"):
                directory = os.path.join(directory, next(rest, ""))
            elif arg.startswith("-C") and len(arg) > 2:
                directory = os.path.join(directory, arg[2:])
            elif arg in ("-f", "--file", "--makefile"):
                makefile = next(rest, "")
            elif arg in ("-j", "-l", "-o", "-W", "-I"):
                next(rest, None)
            elif arg.startswith("-"):
                continue
            elif "=" in arg:
                name, _, value = arg.partition("=")
                overrides[name] = value
            else:
                goals.append(arg)
        names = [makefile] if makefile else ["GNUmakefile", "makefile", "Makefile"]
        text = next((t for t in (read_script(n, directory) for n in names) if t is not None), None)
        lines = None if text is None else shell_make.recipes(text, goals, overrides)
        if lines is None:
            return False
        for line in lines:
            self.run(line, directory, depth + 1)
        return True

    def package(self, name: str, args: list[str], cwd: str, depth: int) -> bool:
        """``npm run SCRIPT`` (``test``, ``start``; yarn, pnpm, bun alike): the script in
        ``package.json``, with its ``pre``/``post`` scripts, read as a command; ``npm pkg
        set`` writes ``package.json``. False: not one of these, or not readable."""
        words = [a for a in args if not a.startswith("-")]
        if not words:
            return False
        sub = words[0]
        if sub == "pkg":
            if words[1:2] and words[1] in ("set", "delete", "fix"):
                self.found.write("package.json", cwd)
            return True
        if sub in ("run", "run-script"):
            script = words[1] if len(words) > 1 else ""
        elif sub in ("test", "t", "start", "stop", "restart"):
            script = {"t": "test"}.get(sub, sub)
        elif name in ("yarn", "pnpm", "bun") and sub not in _PACKAGE_VERBS:
            script = sub  # yarn lint is yarn run lint
        else:
            return False
        text = read_script("package.json", cwd)
        if not script or text is None:
            return False
        import json

        try:
            scripts = json.loads(text).get("scripts", {})
        except (ValueError, AttributeError):
            return False
        if not isinstance(scripts, dict) or not isinstance(scripts.get(script), str):
            return False
        for step in (f"pre{script}", script, f"post{script}"):
            if isinstance(scripts.get(step), str):
                self.run(scripts[step], cwd, depth + 1)
        return True

    def find(self, args: list[str], cwd: str, depth: int, item: Simple) -> None:
        """``find``'s starting points: removed by ``-delete``, handed to ``-exec``'s command
        as ``{}``; ``-fprint FILE`` writes FILE."""
        reached, expression = find_reach(args)
        k = 0
        while k < len(expression):
            e = expression[k]
            if e == "-delete":
                for s in reached:
                    self.found.remove(s, cwd)
            elif e in ("-exec", "-execdir", "-ok", "-okdir"):
                end = k + 1
                while end < len(expression) and expression[end] not in (";", "+"):
                    end += 1
                inner = expression[k + 1 : end]
                for s in reached:
                    words = [w.replace("{}", s) for w in inner]
                    if words:
                        self.command(words, cwd, depth + 1, item, None, [])
                k = end
            elif e in ("-fprint", "-fprint0", "-fls", "-fprintf") and k + 1 < len(expression):
                self.found.write(expression[k + 1], cwd)
            k += 1

    def xargs(
        self,
        args: list[str],
        cwd: str,
        depth: int,
        item: Simple,
        source: tuple[list[str], Simple] | None,
    ) -> None:
        """``… | xargs CMD``: CMD with the operands it reads (known when an ``echo`` of
        literal words or a ``find`` feeds it; otherwise a ``$`` the guard cannot know)."""
        takes = frozenset(
            {"-I", "-L", "-n", "-P", "-d", "-E", "-s", "-a", "-e", "--arg-file", "--delimiter",
             "--max-args", "--max-procs", "--max-lines"}
        )  # fmt: skip
        replace = (option_values(args, ("-I", "--replace")) or [""])[-1]
        j = skip_options(args, 0, takes)
        inner = args[j:] or ["echo"]
        arg_file = (option_values(args, ("-a", "--arg-file")) or [""])[-1]
        self.fed(inner, self.fed_words(source, cwd, item, arg_file), replace, cwd, depth, item)

    def parallel(
        self,
        args: list[str],
        cwd: str,
        depth: int,
        item: Simple,
        source: tuple[list[str], Simple] | None,
    ) -> None:
        j = skip_options(args, 0, frozenset({"-j", "--jobs", "-S", "--sshlogin"}))
        rest = args[j:]
        if ":::" in rest:
            at = rest.index(":::")
            inner, items = rest[:at], [w for w in rest[at + 1 :] if w not in (":::", ":::+")]
        else:
            inner, items = rest, self.fed_words(source, cwd, item)
        if len(inner) == 1 and " " in inner[0]:
            inner = shell_syntax.split_words(inner[0])
        self.fed(inner, items, "{}", cwd, depth, item)

    def fed_words(
        self, source: tuple[list[str], Simple] | None, cwd: str, item: Simple, arg_file: str = ""
    ) -> list[str]:
        """The words ``xargs``/``parallel`` read: from ``-a FILE``, a here-string, a file
        on stdin, an ``echo`` or a ``find`` before the pipe; else ``$``, unknown."""
        if arg_file:
            text = read_script(arg_file, cwd)
        elif item.stdin is not None or item.stdin_file is not None or source is None:
            text = self.stdin_text(item, None, cwd) if source is None else None
            text = None if text == "" else text
        else:
            text = self.piped_text(source)
        if text is not None:
            return text.split()
        if source is not None and source[0][:1] == ["find"]:
            return find_reach(source[0][1:])[0]
        return ["$"]  # what it reads: unknown

    def fed(
        self, inner: list[str], items: list[str], replace: str, cwd: str, depth: int, item: Simple
    ) -> None:
        for value in items[:64] or ["$"]:
            if replace and any(replace in w for w in inner):
                words = [w.replace(replace, value) for w in inner]
            else:
                words = [*inner, value]
            self.command(words, cwd, depth + 1, item, None, [])


def find_reach(args: list[str]) -> tuple[list[str], list[str]]:
    """What ``find ARGS`` finds, as globs of paths (its starting points, or with one
    ``-name NAME`` and no ``-o``, ``START/**/NAME``), and its expression."""
    j = 0
    while j < len(args) and args[j] in ("-H", "-L", "-P", "-O", "-D"):
        j += 2 if args[j] in ("-O", "-D") else 1
    starts: list[str] = []
    while j < len(args) and not args[j].startswith(("-", "(", "!")):
        starts.append(args[j])
        j += 1
    starts = starts or ["."]
    expression = args[j:]
    names = [expression[k + 1] for k, e in enumerate(expression[:-1]) if e == "-name"]
    alone = len(names) == 1 and not set(expression) & {"-o", "-or", "-not", "!", ","}
    return ([f"{s.rstrip('/')}/**/{names[0]}" for s in starts] if alone else starts), expression


def skip_options(words: list[str], i: int, takes: frozenset[str]) -> int:
    """Past the options (and their values, for ``takes``) from ``words[i]``."""
    while i < len(words):
        word = words[i]
        if word == "--":
            return i + 1
        if word in takes:
            i += 2
        elif word.startswith("-") and word != "-":
            i += 1
        else:
            break
    return i


def read_script(path: str, cwd: str) -> str | None:
    """The text of a script file, or None (unknown: missing, too big, not text)."""
    if "$" in path or cwd == UNKNOWN_DIR:
        return None
    try:
        with open(os.path.join(cwd, path), "rb") as f:
            data = f.read(MAX_SCRIPT + 1)
    except (OSError, ValueError):
        return None
    if len(data) > MAX_SCRIPT or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_shell_script(text: str) -> bool:
    """A script a shell runs: a ``sh``-family ``#!`` line, or none at all."""
    if not text.startswith("#!"):
        return True
    first = text.split("\n", 1)[0]
    program = first[2:].split()
    name = os.path.basename(program[0]) if program else ""
    if name == "env" and len(program) > 1:
        name = os.path.basename(program[-1])
    return name in shell_programs.SHELLS
