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

from coord.hooks import shell_rewriters
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
        made = destinations(args, takes, cwd)
        for t in made:
            out.write(t, cwd)
        if name == "ln" and ("s" in short or "--symbolic" in args):
            sources = operands(args, takes)
            if len(sources) == 1:  # `ln -s TARGET`: a link named after it, here
                made = [os.path.basename(sources[0].rstrip("/"))]
            elif not option_values(args, ("-t", "--target-directory")):
                sources = sources[:-1]  # the last operand is the link (or its directory)
            for source, link in zip(sources, made, strict=False):
                out.link(link, source, cwd)
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


def _zip(args: list[str], cwd: str, out: Writes) -> None:
    """zip ARCHIVE FILES: the archive; with -m (move into it) the files go."""
    found = operands(args, frozenset({"-b", "-n", "-t", "-tt", "-x", "-i", "-P", "-O"}))
    for t in found[:1]:
        out.write(t if t.endswith(".zip") or "." in os.path.basename(t) else t + ".zip", cwd)
    if "m" in letters(args) or "--move" in args:
        for t in found[1:]:
            out.remove(t, cwd)


WRITERS: dict[str, Writer] = {
    **shell_rewriters.REWRITERS,
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
    "split": _split("x", frozenset({"-a", "-b", "-C", "-l", "-n", "-t", "--additional-suffix"})),
    "csplit": _split("xx", frozenset({"-b", "-f", "-n", "--prefix", "--suffix-format"})),
    "rename": _rename,
    "prename": _rename,
    "perl-rename": _rename,
}
