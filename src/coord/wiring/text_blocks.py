"""Coord's part of a text file it does not own: one block between ``coord:begin`` and ``coord:end``.

Used for ``AGENTS.md``, ``CLAUDE.md``, ``GEMINI.md``, ``.codex/config.toml``,
``.pre-commit-config.yaml`` and the git hook. Every byte outside the block stays as it was:

- a file with the block gets it replaced in place, at the indentation its begin marker has;
- a file without it gets it where the file's format wants it (``BlockSpec.insert``: at the end
  by default; the pre-commit formats bring their own), unless a line says it is there already
  (``BlockSpec.already``: ``@AGENTS.md`` in a ``CLAUDE.md`` the user wrote);
- a begin marker without its end refuses the run: coord will not guess where its block ends.

Markdown files mark the block with HTML comments, the others with ``#`` comments.
"""

from __future__ import annotations

from dataclasses import dataclass

from coord.errors import InvalidInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from coord.wiring.plan import Plan

MD_BEGIN = "<!-- coord:begin -->"
MD_END = "<!-- coord:end -->"
HASH_BEGIN = "# coord:begin (written by `coord init`; `coord uninstall` removes it)"
HASH_BEGIN_PREFIX = "# coord:begin"  # the words after it may change from one release to another
HASH_END = "# coord:end"


def _markers(style: str) -> tuple[str, str, str]:
    """(begin line, what a begin line starts with, end line)."""
    if style == "md":
        return MD_BEGIN, MD_BEGIN, MD_END
    return HASH_BEGIN, HASH_BEGIN_PREFIX, HASH_END


def block(style: str, body: str, indent: int = 0) -> str:
    """The whole block, markers and ``body``, the markers at column ``indent``."""
    begin, _, end = _markers(style)
    pad = " " * indent
    return f"{pad}{begin}\n{body}{pad}{end}\n"


def at_end(key: str, old: str, lines: list[str], spec: BlockSpec, plan: Plan) -> str | None:
    """The block after the file's text, one blank line between them."""
    text = old
    if text and not text.endswith("\n"):
        text += "\n"
    if text.strip() and not text.endswith("\n\n"):
        text += "\n"
    return text + block(spec.style, spec.render(0))


@dataclass
class BlockSpec:
    style: str  # "md" (<!-- -->) or "hash" (#)
    render: Callable[[int], str]  # the lines between the markers, for an indentation
    # where a file without the block gets it: (key, text, its lines, spec, plan) -> the new
    # text, or None to leave the file as it is (with a warning in the plan saying why)
    insert: Callable[[str, str, list[str], BlockSpec, Plan], str | None] = at_end
    new_text: str | None = None  # the whole file when it does not exist yet
    mode: int = 0o644
    already: tuple[str, ...] = ()  # a line meaning "already there" without our block
    # (key, old text, new text) -> None, or a warning: the file is left as it is. Raises
    # InvalidInput when the file cannot be read, which refuses the whole run.
    check: Callable[[str, str, str], str | None] | None = None


def find_block(key: str, lines: list[str], style: str) -> tuple[int, int] | None:
    """The indexes of the begin and end lines of coord's block, or None without one."""
    _, prefix, end = _markers(style)
    for i, line in enumerate(lines):
        if line.strip().startswith(prefix):
            for j in range(i + 1, len(lines)):
                if lines[j].strip() == end:
                    return i, j
            raise InvalidInput(
                f"{key}: line {i + 1} opens a coord block that never closes (`{end}`); fix it "
                "by hand and run coord again: nothing was written"
            )
    return None


def decode(key: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{key}: not UTF-8 text; nothing was written") from None


def apply_block(
    key: str, raw: bytes | None, spec: BlockSpec, plan: Plan
) -> tuple[bytes | None, bool]:
    """(the new bytes, whether coord's block is in them); ``raw`` itself when nothing changes."""
    if raw is None:
        new = spec.new_text if spec.new_text is not None else block(spec.style, spec.render(0))
        old = ""
    else:
        old = decode(key, raw)
        lines = old.splitlines(keepends=True)
        span = find_block(key, lines, spec.style)
        if span is not None:
            begin, end = span
            indent = len(lines[begin]) - len(lines[begin].lstrip(" "))
            lines[begin : end + 1] = [block(spec.style, spec.render(indent), indent)]
            new = "".join(lines)
        elif any(line.strip() in spec.already for line in lines):
            plan.notes.append(f"{key}: already has it; left as it is")
            return raw, False
        else:
            inserted = spec.insert(key, old, lines, spec, plan)
            if inserted is None:
                return raw, False
            new = inserted
    if spec.check is not None:
        warning = spec.check(key, old, new)
        if warning is not None:
            plan.warnings.append(warning)
            return raw, False
    after = new.encode("utf-8")
    return (raw if raw == after else after), True


def remove_block(key: str, raw: bytes, style: str) -> tuple[bytes, bool]:
    """The bytes without coord's block; (them, whether nothing but a ``#!`` line is left)."""
    lines = decode(key, raw).splitlines(keepends=True)
    while (span := find_block(key, lines, style)) is not None:
        begin, end = span
        del lines[begin : end + 1]
        if begin == len(lines) and begin > 0 and not lines[begin - 1].strip():
            del lines[begin - 1]  # the blank line `at_end` put before a block at the end
    rest = [line for line in lines if line.strip()]
    empty = not rest or (len(rest) == 1 and rest[0].startswith("#!"))
    return "".join(lines).encode("utf-8"), empty
