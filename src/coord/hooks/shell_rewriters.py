"""The programs that rewrite files in place, and which files each rewrites: editors (``ex``,
``vim -es``, ``ed``), ``dos2unix``, ``awk`` (``-i inplace``, ``print > "f"``), ``patch`` and
the formatters and fixers (``black``, ``ruff format``, ``prettier --write``), read as
``coord.hooks.shell_writers``'s are (``REWRITERS`` joins its ``WRITERS``).

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

import os

from coord.hooks.shell_options import letters, operands, option_values

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from coord.hooks.shell import Writes

    Writer = Callable[[list[str], str, Writes], None]


def _editor(name: str) -> Writer:
    """ex, vi, vim, nvim, ed, nano, emacs: they may write every file they open."""
    takes = {"-c", "--cmd", "-S", "-u", "-U", "-i", "-s", "-w", "-W", "-T", "-t", "-q",
             "--eval", "-l", "--load", "-f", "--funcall"}  # fmt: skip
    if name in ("ed", "red"):
        takes = {"-p", "--prompt"}

    def editor(args: list[str], cwd: str, out: Writes) -> None:
        ex_mode = name == "ex" or any(a.startswith("-") and "e" in a[1:2] for a in args)
        skip = frozenset(takes - {"-s"} if ex_mode else takes)  # in ex mode -s is silent
        for t in operands(args, skip):
            if not t.startswith("+"):
                out.write(t, cwd)

    return editor


def ed_writes(script: str | None) -> bool:
    """Could this ``ed`` script (None: unknown) write its file: a ``w``, ``W``, ``wq`` or
    ``x`` command, after any address?"""
    if script is None:
        return True
    for line in script.replace("\\n", "\n").splitlines():
        command = line.strip().lstrip("0123456789.,;$+-'/ ")
        if command[:1] in ("w", "W", "x", "!"):
            return True
    return False


def _dos2unix(args: list[str], cwd: str, out: Writes) -> None:
    found = operands(args, frozenset())
    new = option_values(args, ("-n", "--newfile"))
    for t in found[1::2] if new else found:
        out.write(t, cwd)


def _awk(args: list[str], cwd: str, out: Writes) -> None:
    """awk: its program judged by the paths its strings name (``print > "f"``); with
    ``-i inplace`` (gawk) the files after the program are rewritten."""
    takes = frozenset({"-f", "--file", "-v", "--assign", "-F", "--field-separator", "-i",
                       "--include", "-e", "--source", "-E", "--exec", "-l", "--load"})  # fmt: skip
    in_place = "inplace" in option_values(args, ("-i", "--include"))
    programs = option_values(args, ("-e", "--source"))
    given = programs or option_values(args, ("-f", "--file", "-E", "--exec"))
    found = operands(args, takes)
    if not given and found:
        programs, found = [found[0]], found[1:]
    for program in programs:
        out.code(program, cwd, "`awk` runs a program the guard does not run")
    if in_place:
        for t in found:
            if "=" not in t:
                out.write(t, cwd)


def patch_files(args: list[str], cwd: str, out: Writes, text: str | None) -> None:
    """``patch``: the files its patch names (under every ``-p`` it could be given, in ``-d
    DIR``), read from ``-i FILE``, its input or the file operand; a patch the guard cannot
    see reaches all of ``-d DIR`` (or the directory it runs in)."""
    takes = frozenset({"-p", "-i", "--input", "-d", "--directory", "-o", "--output", "-r",
                       "-F", "-z", "-B", "-Y", "-V", "-D", "-g"})  # fmt: skip
    directory = (option_values(args, ("-d", "--directory")) or ["."])[-1]
    found = operands(args, takes)
    for t in option_values(args, ("-o", "--output")) + found[:1]:
        if t != "-":
            out.write(os.path.join(directory, t), cwd)
    source = (option_values(args, ("-i", "--input")) or found[1:2] or [""])[-1]
    if source:
        text = _read_text(os.path.join(cwd, directory, source) if cwd[:1] != "\0" else "")
    if text is None:
        out.reach(
            os.path.join(directory, "**"), cwd, "`patch` applies a patch the guard cannot read"
        )
        return
    for path in _patched_paths(text):
        parts = path.split("/")
        for k in range(len(parts)):  # any -pN strips the first N names
            out.write(os.path.join(directory, *parts[k:]), cwd)


def _patched_paths(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        if line.startswith(("+++ ", "--- ", "*** ")):
            name = line[4:].split("\t", 1)[0].strip()
        elif line.startswith("diff --git "):
            found += [w for w in line.split()[2:4]]
            continue
        elif line.startswith("Index: "):
            name = line[7:].strip()
        else:
            continue
        if name and name != "/dev/null" and not name.startswith("*"):
            found.append(name)
    return list(dict.fromkeys(found))


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(1024 * 1024 + 1)
        return None if len(data) > 1024 * 1024 else data.decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


# formatters and fixers: (do they write by default, the flags that say the other way)
_FORMATTERS: dict[str, tuple[bool, frozenset[str]]] = {
    "black": (True, frozenset({"--check", "--diff"})),
    "isort": (True, frozenset({"--check-only", "--check", "-c", "--diff"})),
    "rustfmt": (True, frozenset({"--check"})),
    "stylua": (True, frozenset({"--check", "-c"})),
    "prettier": (False, frozenset({"--write", "-w"})),
    "eslint": (False, frozenset({"--fix"})),
    "gofmt": (False, frozenset({"-w"})),
    "goimports": (False, frozenset({"-w"})),
    "clang-format": (False, frozenset({"-i"})),
    "shfmt": (False, frozenset({"-w", "--write"})),
    "autopep8": (False, frozenset({"-i", "--in-place"})),
    "yapf": (False, frozenset({"-i", "--in-place"})),
    "autoflake": (False, frozenset({"-i", "--in-place"})),
}
# ruff's subcommands: (writes by default, the flags that say the other way)
_RUFF = {"format": (True, frozenset({"--check", "--diff"})), "check": (False, frozenset({"--fix"}))}


def _formatter(name: str) -> Writer:
    """A formatter or fixer: its operands (or the directory it runs in) when it writes."""

    def formatter(args: list[str], cwd: str, out: Writes) -> None:
        given = args
        if name == "ruff":
            sub = next((a for a in args if not a.startswith("-")), "check")
            if sub not in _RUFF:
                return
            writes, flags = _RUFF[sub]
            given = [a for a in args if a != sub]
        else:
            writes, flags = _FORMATTERS[name]
        said = set(given) | {"-" + c for c in letters(given)} | {a.split("=")[0] for a in given}
        if writes == bool(said & flags) or "--no-fix" in given:
            return
        for t in operands(given, frozenset({"--config", "--stdin-filename", "-c"})) or ["."]:
            out.write(t, cwd)

    return formatter


REWRITERS: dict[str, Writer] = {
    **{name: _formatter(name) for name in (*_FORMATTERS, "ruff")},
    "ex": _editor("ex"),
    "vi": _editor("vi"),
    "vim": _editor("vim"),
    "nvim": _editor("nvim"),
    "view": _editor("view"),
    "ed": _editor("ed"),
    "red": _editor("red"),
    "nano": _editor("nano"),
    "emacs": _editor("emacs"),
    "dos2unix": _dos2unix,
    "unix2dos": _dos2unix,
    "mac2unix": _dos2unix,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
}
