"""The programs that unpack, pack, fetch or copy files in bulk, and which files each writes:
``tar``, ``unzip``, ``gzip`` and its kin, ``curl``, ``wget``, ``rsync`` (one function each,
read as ``coord.hooks.shell_writers``'s are).

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


def _rsync(args: list[str], cwd: str, out: Writes) -> None:
    takes = frozenset(
        {"-e", "--rsh", "-f", "--filter", "--exclude", "--include", "-T", "--temp-dir",
         "--files-from", "--exclude-from", "--include-from", "--log-file", "--chmod",
         "--rsync-path", "-B", "--block-size", "--backup-dir", "--partial-dir", "--suffix"}
    )  # fmt: skip
    found = operands(args, takes)
    if len(found) < 2:
        return
    dest = found[-1]
    if ":" not in dest.split("/", 1)[0]:  # host:path is not here
        out.write(dest.rstrip("/") or "/", cwd)
    if "--remove-source-files" in args:
        for t in found[:-1]:
            out.write(t, cwd)
    for t in option_values(args, ("--log-file",)):
        out.write(t, cwd)


def _tar(args: list[str], cwd: str, out: Writes) -> None:
    first = args[0] if args else ""
    mode = first if first and not first.startswith("-") else ""  # tar xzf a.tgz
    short = mode + letters(args)
    longs = " ".join(a for a in args if a.startswith("--"))
    directory = (option_values(args, ("-C", "--directory")) or ["."])[-1]
    takes = frozenset({"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X"})
    rest = args[1:] if mode else args
    members = operands(rest, takes)
    archive = option_values(rest, ("-f", "--file"))
    if mode and "f" in mode and not archive:
        archive = members[:1]  # the old style's f takes the first operand
    members = [m for m in members if m not in archive]
    if "x" in short or "--extract" in longs or "--get" in longs:
        for t in [os.path.join(directory, m) for m in members] or [directory]:
            out.write(t, cwd)
    elif "c" in short or "r" in short or "u" in short or "--create" in longs:
        for t in archive:
            if t != "-":
                out.write(t, cwd)
        if "--remove-files" in longs:
            for t in members:
                out.remove(t, cwd)


def _unzip(args: list[str], cwd: str, out: Writes) -> None:
    short = letters(args)
    if set(short) & set("lptvZ"):
        return  # lists, tests or prints: writes nothing
    takes = frozenset({"-d", "-x", "-P"})
    found = operands(args, takes)
    directory = (option_values(args, ("-d",)) or ["."])[-1]
    members = found[1:]
    for t in [os.path.join(directory, m) for m in members] or [directory]:
        out.write(t, cwd)


def _curl(args: list[str], cwd: str, out: Writes) -> None:
    into = (option_values(args, ("--output-dir",)) or [""])[-1]
    for t in option_values(args, ("-o", "--output", "-D", "--dump-header", "-c",
                                  "--cookie-jar", "--trace", "--trace-ascii", "--stderr",
                                  "--etag-save", "--libcurl")):  # fmt: skip
        if t != "-":
            out.write(os.path.join(into, t), cwd)
    if "O" in letters(args) or "--remote-name" in args or "--remote-name-all" in args:
        urls = [a for a in args if "://" in a] or [""]
        for url in urls:
            name = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "index.html"
            out.write(os.path.join(into, name) if name else (into or "."), cwd)


def _wget(args: list[str], cwd: str, out: Writes) -> None:
    into = (option_values(args, ("-P", "--directory-prefix")) or ["."])[-1]
    for t in option_values(args, ("-o", "--output-file", "-a", "--append-output")):
        out.write(t, cwd)
    documents = option_values(args, ("-O", "--output-document"))
    for t in documents:
        if t != "-":
            out.write(t, cwd)
    if documents or "--spider" in args:
        return
    recursive = set(letters(args)) & set("rm") or "--recursive" in args or "--mirror" in args
    for url in [a for a in args if "://" in a]:
        if recursive:
            out.write(into, cwd)
            continue
        name = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "index.html"
        out.write(os.path.join(into, name), cwd)


_UNPACKED = {
    ".gz": "gz",
    ".tgz": "gz",
    ".z": "gz",
    ".bz2": "bz",
    ".xz": "xz",
    ".lzma": "xz",
    ".zst": "zst",
    ".lz4": "lz4",
}


def _compressor(suffix: str, unpacks: bool) -> Writer:
    """gzip/bzip2/xz/zstd/lz4 and their un-: the file goes, its (un)packed twin comes."""

    def compress(args: list[str], cwd: str, out: Writes) -> None:
        short = letters(args)
        if set(short) & set("clt") or "--stdout" in args or "--list" in args:
            return  # to standard output, or only listing and testing
        keep = "k" in short or "--keep" in args
        unpack = unpacks or "d" in short or "--decompress" in args
        for t in operands(args, frozenset({"-S", "--suffix", "-b", "-T", "-o"})):
            twin = t
            if unpack:
                base, ext = os.path.splitext(t)
                twin = base if ext.lower() in _UNPACKED else t + ".out"
            else:
                twin = t + suffix
            out.write(twin, cwd)
            if not keep and suffix != ".zst" and suffix != ".lz4":
                out.remove(t, cwd)  # zstd and lz4 keep the source by default

    return compress


ARCHIVERS: dict[str, Writer] = {
    "rsync": _rsync,
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
    "unzip": _unzip,
    "curl": _curl,
    "wget": _wget,
    "gzip": _compressor(".gz", False),
    "pigz": _compressor(".gz", False),
    "gunzip": _compressor(".gz", True),
    "bzip2": _compressor(".bz2", False),
    "bunzip2": _compressor(".bz2", True),
    "xz": _compressor(".xz", False),
    "unxz": _compressor(".xz", True),
    "lzma": _compressor(".lzma", False),
    "unlzma": _compressor(".lzma", True),
    "zstd": _compressor(".zst", False),
    "unzstd": _compressor(".zst", True),
    "lz4": _compressor(".lz4", False),
}
