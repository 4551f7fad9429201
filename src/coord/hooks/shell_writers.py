"""The programs that write files, and which files each writes: one function per kind.

Each function reads one command's arguments (after the program's name) run in ``cwd`` and
records on ``out`` (``coord.hooks.shell.Writes``) what it writes (``out.write``), deletes
(``out.remove``: all beneath it too), or may reach without the guard knowing what
(``out.unread``). ``WRITERS`` maps each program's name to its function. Options are read
as the programs read them: a short option's letters may be clustered (``cp -rT``, ``sed
-Ei``), a value attached (``-oFILE``, ``--output=FILE``) or the next word.

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

_COPY_VALUE = frozenset({"-S", "-t", "--suffix", "--target-directory"})


def _plain(args: list[str], cwd: str, out: Writes) -> None:
    for t in operands(args, frozenset()):
        out.write(t, cwd)


def _remove(args: list[str], cwd: str, out: Writes) -> None:
    for t in operands(args, frozenset({"-n", "--iterations", "-s", "--size", "--random-source"})):
        out.remove(t, cwd)


def _mkdir(args: list[str], cwd: str, out: Writes) -> None:
    for t in operands(args, frozenset({"-m", "--mode", "-Z", "--context"})):
        out.write(t, cwd)


def _mktemp(args: list[str], cwd: str, out: Writes) -> None:
    """mktemp: a new file in ``-p DIR`` (or where its template says): any name there."""
    directory = (option_values(args, ("-p", "--tmpdir")) or [""])[-1]
    template = (operands(args, frozenset({"-p", "--suffix"})) or [""])[0]
    if directory or "/" in template:
        out.write(os.path.join(directory, os.path.dirname(template), "*"), cwd)


def _touch(args: list[str], cwd: str, out: Writes) -> None:
    for t in operands(args, frozenset({"-d", "-t", "-r", "--date", "--reference"})):
        out.write(t, cwd)


def _truncate(args: list[str], cwd: str, out: Writes) -> None:
    for t in operands(args, frozenset({"-s", "-r", "--size", "--reference"})):
        out.write(t, cwd)


def _mv(args: list[str], cwd: str, out: Writes) -> None:
    for t in operands(args, _COPY_VALUE) + option_values(args, ("-t", "--target-directory")):
        out.write(t, cwd)


def _copy(name: str) -> Writer:
    def copy(args: list[str], cwd: str, out: Writes) -> None:
        takes = _COPY_VALUE | {"-m", "-o", "-g", "--mode", "--owner", "--group"}
        short = letters(args)
        if name == "install" and ("d" in short or "--directory" in args):
            for t in operands(args, takes):
                out.write(t, cwd)
            return
        for t in destinations(args, takes, cwd):
            out.write(t, cwd)
        hard = (
            ("s" not in short and "--symbolic" not in args)
            if name in ("ln", "link")
            else (name == "cp" and ("l" in short or "--link" in args))
        )
        if hard:
            # a hard link is the source under another name, writable there: making one
            # writes the source (a symbolic link resolves back to it, so is judged there)
            sources = operands(args, takes)
            into = option_values(args, ("-t", "--target-directory"))
            for t in sources if into else sources[:-1]:
                out.write(t, cwd)

    return copy


def destinations(args: list[str], takes: frozenset[str], cwd: str) -> list[str]:
    """What cp/install/ln/rsync write: the destination, or DIR/name for each source."""
    found = operands(args, takes)
    target_dir = option_values(args, ("-t", "--target-directory"))
    if target_dir:
        sources, directory = found, target_dir[-1]
    elif len(found) >= 2:
        sources, dest = found[:-1], found[-1]
        into = (
            "T" not in letters(args)
            and "--no-target-directory" not in args
            and (len(sources) > 1 or dest.endswith("/") or os.path.isdir(os.path.join(cwd, dest)))
        )
        if not into:
            return [dest]
        directory = dest
    else:
        return []
    names = [n for s in sources for n in _source_names(s, cwd)]
    return [os.path.join(directory, n) for n in names if n] or [directory]


def _source_names(source: str, cwd: str) -> list[str]:
    """The names a source gives in a destination directory: a glob's matches' (``cp src/*.py
    lib/`` writes ``lib/a.py``, not every ``lib/*.py``), else its own name."""
    name = os.path.basename(source.rstrip("/"))
    if not set(source) & set("*?[") or "$" in source:
        return [name]
    import glob

    try:
        matches = glob.glob(source, root_dir=cwd if os.path.isdir(cwd) else None)
    except (OSError, ValueError):
        matches = []
    return [os.path.basename(m.rstrip("/")) for m in matches[:2000]] or [name]


def _in_place(name: str) -> Writer:
    """``sed -i`` / ``perl -i``: the files after the script."""
    script_letters = "ef" if name == "sed" else "eE"

    def in_place(args: list[str], cwd: str, out: Writes) -> None:
        writing = False
        script_given = False
        found: list[str] = []
        rest = iter(args)
        for arg in rest:
            if arg == "--":
                found += list(rest)
            elif arg.startswith("--"):
                writing = writing or arg == "--in-place" or arg.startswith("--in-place=")
                if arg in ("--expression", "--file", "--line-length"):
                    next(rest, None)
                script_given = script_given or arg.startswith(("--expression", "--file"))
            elif arg.startswith("-") and arg != "-":
                cluster, k = arg[1:], 0
                while k < len(cluster):
                    letter = cluster[k]
                    if letter == "i":
                        writing = True
                        break  # the rest of the cluster is the backup suffix
                    if letter in script_letters or (name == "sed" and letter == "l"):
                        script_given = script_given or letter != "l"
                        if k == len(cluster) - 1:
                            next(rest, None)
                        break
                    if name == "perl" and letter in "MmIx":
                        break  # its value is attached
                    k += 1
                    if name == "perl" and letter in "0l":  # octal digits may follow
                        while k < len(cluster) and cluster[k] in "01234567":
                            k += 1
            else:
                found.append(arg)
        if writing:
            follows = "--follow-symlinks" in args
            for t in found if script_given else found[1:]:
                if follows:
                    out.write(t, cwd)
                else:
                    out.replace(t, cwd)

    return in_place


def _dd(args: list[str], cwd: str, out: Writes) -> None:
    for a in args:
        if a.startswith("of="):
            out.write(a[3:], cwd)


def _chmod(args: list[str], cwd: str, out: Writes) -> None:
    """chmod/chown/chgrp/chattr/setfacl: the files after the mode or owner (metadata)."""
    takes = frozenset({"-m", "-M", "-x", "-X", "--set", "--set-file"})
    # chmod -x FILE: a mode may look like an option (letters of ugoa+-=rwxXst only)
    modes = [a for a in args if a[:1] == "-" and len(a) > 1 and set(a[1:]) <= set("rwxXst")]
    found = operands([a for a in args if a not in modes], takes)
    if (
        not modes
        and not any(a.startswith("--reference") for a in args)
        and not option_values(args, ("-m", "-x", "--set"))
    ):
        found = found[1:]
    for t in found:
        out.write(t, cwd)


def _sort(args: list[str], cwd: str, out: Writes) -> None:
    for t in option_values(args, ("-o", "--output")):
        out.write(t, cwd)


def _uniq(args: list[str], cwd: str, out: Writes) -> None:
    found = operands(args, frozenset({"-f", "-s", "-w", "--skip-fields", "--skip-chars"}))
    if len(found) >= 2:
        out.write(found[1], cwd)


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


def _split(prefix_default: str, takes: frozenset[str]) -> Writer:
    def split(args: list[str], cwd: str, out: Writes) -> None:
        found = operands(args, takes)
        prefix = (option_values(args, ("-f", "--prefix")) or [""])[-1]
        if not prefix:
            prefix = found[1] if prefix_default == "x" and len(found) >= 2 else prefix_default
        out.write(prefix + "*", cwd)

    return split


def _rename(args: list[str], cwd: str, out: Writes) -> None:
    """rename EXPRESSION FILES (util-linux: FROM TO FILES): every file may move."""
    for t in operands(args, frozenset({"-e"}))[1:]:
        out.write(t, cwd)


def _sponge(args: list[str], cwd: str, out: Writes) -> None:
    for t in operands(args, frozenset())[:1]:
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


# the archivers, compressors and fetchers: coord.hooks.shell_archives, loaded when one runs
_ARCHIVERS = (
    "rsync",
    "tar",
    "gtar",
    "bsdtar",
    "unzip",
    "curl",
    "wget",
    "gzip",
    "pigz",
    "gunzip",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "lzma",
    "unlzma",
    "zstd",
    "unzstd",
    "lz4",
)


def _archiver(args: list[str], cwd: str, out: Writes) -> None:
    raise AssertionError("replaced by shell_archives' function in WRITERS")  # pragma: no cover


def writer(name: str) -> Writer:
    """The function that reads the writes of ``name`` (one of ``WRITERS``)."""
    found = WRITERS[name]
    if found is _archiver:
        from coord.hooks import shell_archives

        found = WRITERS[name] = shell_archives.ARCHIVERS[name]
    return found


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


def _zip(args: list[str], cwd: str, out: Writes) -> None:
    """zip ARCHIVE FILES: the archive; with -m (move into it) the files go."""
    found = operands(args, frozenset({"-b", "-n", "-t", "-tt", "-x", "-i", "-P", "-O"}))
    for t in found[:1]:
        out.write(t if t.endswith(".zip") or "." in os.path.basename(t) else t + ".zip", cwd)
    if "m" in letters(args) or "--move" in args:
        for t in found[1:]:
            out.remove(t, cwd)


WRITERS: dict[str, Writer] = {
    **{name: _formatter(name) for name in (*_FORMATTERS, "ruff")},
    "zip": _zip,
    **dict.fromkeys(_ARCHIVERS, _archiver),
    "tee": _plain,
    "fallocate": _plain,
    "sponge": _sponge,
    "rm": _remove,
    "rmdir": _remove,
    "unlink": _remove,
    "shred": _remove,
    "touch": _touch,
    "mkdir": _mkdir,
    "mktemp": _mktemp,
    "truncate": _truncate,
    "mv": _mv,
    "cp": _copy("cp"),
    "ln": _copy("ln"),
    "link": _copy("link"),
    "install": _copy("install"),
    "sed": _in_place("sed"),
    "gsed": _in_place("sed"),
    "perl": _in_place("perl"),
    "dd": _dd,
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "chattr": _chmod,
    "setfacl": _chmod,
    "sort": _sort,
    "uniq": _uniq,
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
    "split": _split("x", frozenset({"-a", "-b", "-C", "-l", "-n", "-t", "--additional-suffix"})),
    "csplit": _split("xx", frozenset({"-b", "-f", "-n", "--prefix", "--suffix-format"})),
    "rename": _rename,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
    "prename": _rename,
    "perl-rename": _rename,
}
