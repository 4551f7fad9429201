"""What a shell command would do to files, as ``coord.hooks.shell`` reads it: ``Writes``.

The reader and the program readers (``coord.hooks.shell_writers``, ``shell_runs``) record on
one ``Writes`` what a command writes, deletes, replaces, or could reach unread;
``coord.hooks.shell_guard`` judges it. Program text the guard does not run (``python -c``,
awk's) is judged by the paths its strings name, when it calls anything able to write.

Stdlib only: it runs before every shell command an agent runs.
"""

from __future__ import annotations

import os
import re

_CODE_STRING = r"\"((?:[^\"\\\n]|\\.){1,300})\"|'((?:[^'\\\n]|\\.){1,300})'"
# (patterns kept as text: compiled at first use, which most commands never reach)
# what program text must call to change a file (Python, Node, Perl, Ruby, awk...): code
# without any of these writes nothing the guard could judge, and its strings are only read
_CODE_WRITES = (
    r"write|append|print\s*>|unlink|remove|rmdir|rmtree|rename|replace|copy|move|truncate|"
    r"chmod|chown|utime|system|subprocess|popen|spawn|exec|eval|touch|mkdir|makedirs|link|"
    r"dump|save|to_csv|to_json|FileUtils|child_process|import\s*\(|__import__|getattr|"
    r"open\s*\([^)]*,|open\s*\(\s*[A-Z]+\s*,|>|`|\brm|\bmv\b|\bcp\b"
)
# code that reads its own operands as paths: then they are judged too
_CODE_ARGV = r"argv|ARGV|\$ARGV|@ARGV|process\.argv|\$[0-9*@]|FILENAME"


class Writes:
    """What a command would do to files: ``targets`` as (path as written, directory it is
    relative to); ``bypass``: why it would skip coord's pre-commit guard; ``removed``: the
    targets that ``rm`` and its kin delete, with all beneath them; ``git``: each ``git``
    command's arguments and directory (``coord.hooks.shell_guard`` reads ``git clean``);
    ``unread``: (a path it could reach, its directory, why the guard cannot tell what it
    writes); ``links``: the symbolic links it makes, (the link, what it points to, the
    directory both are read from), so a later write through one in the same command is judged
    where it lands; ``too_big``: why it was not read at all."""

    __slots__ = ("bypass", "git", "links", "removed", "replaced", "targets", "too_big", "unread")

    def __init__(self) -> None:
        self.targets: list[tuple[str, str]] = []
        self.bypass: list[str] = []
        self.removed: list[tuple[str, str]] = []
        self.git: list[tuple[list[str], str]] = []
        self.unread: list[tuple[str, str, str]] = []
        self.replaced: list[tuple[str, str]] = []  # written by a rename over them: a link
        self.links: list[tuple[str, str, str, int]] = []
        self.too_big: str | None = None

    def write(self, raw: str, cwd: str) -> None:
        self.targets.append((raw, cwd))

    def replace(self, raw: str, cwd: str) -> None:
        """``raw`` is rewritten by a new file renamed over it (``sed -i``): a symbolic link
        there is replaced, not written through."""
        self.targets.append((raw, cwd))
        self.replaced.append((raw, cwd))

    def link(self, raw: str, pointing_to: str, cwd: str) -> None:
        """``ln -s pointing_to raw``: made before anything after it in the command runs, and
        read then as a name for ``pointing_to`` (relative to the link's own directory). The
        targets written so far (the link's own making among them) are not written through it."""
        self.links.append((raw, pointing_to, cwd, len(self.targets)))

    def through_links(self, index: int, raw: str, cwd: str) -> str | None:
        """Where the write ``targets[index]`` (``raw`` in ``cwd``) lands if it goes through a
        link this command made before it (the link itself or a directory link on its way),
        else None."""
        path = os.path.normpath(os.path.join(cwd, raw))
        for link, pointing_to, where, after in self.links:
            if index < after:
                continue
            made = os.path.normpath(os.path.join(where, link))
            if path != made and not path.startswith(made + os.sep):
                continue
            lands = os.path.normpath(os.path.join(os.path.dirname(made), pointing_to))
            return lands + path[len(made) :]
        return None

    def remove(self, raw: str, cwd: str) -> None:
        self.targets.append((raw, cwd))
        self.removed.append((raw, cwd))

    def reach(self, raw: str, cwd: str, why: str) -> None:
        self.unread.append((raw, cwd, why))

    def code(self, text: str, cwd: str, why: str, argv: list[str] | None = None) -> None:
        """Program text the guard does not run (``python -c``, ``perl -e``, awk's): when it
        calls anything that could change a file, each path its strings name is judged, and
        the operands ``argv`` it is given when it reads them."""
        if not re.search(_CODE_WRITES, text, re.IGNORECASE):
            return
        for match in re.finditer(_CODE_STRING, text):
            value = match.group(1) if match.group(1) is not None else match.group(2)
            value = value.strip().lstrip("+<>| ").strip()  # perl's open(F, ">x")
            if value and "\n" not in value and not value.startswith(("%", "\\")):
                self.reach(value, cwd, why)
        if argv and re.search(_CODE_ARGV, text):
            for operand in argv:
                self.reach(operand, cwd, why)
