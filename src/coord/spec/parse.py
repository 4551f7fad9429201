"""Read a Markdown design document into a ``SpecDocument``: ``parse`` and ``parse_file``.

The format is the work-package protocol of real design documents (``tests/specs/harness-v2.md``,
section 20, is the reference). Parsing never stops at a bad line: it records a ``Problem`` and
goes on. Everything is 1-based lines of the text as given (CRLF counts as one line end).

**Packages** may appear anywhere::

    - [ ] **R3 — harness restore inventory.** Dependencies: F0, R2.
      - Primary files: `src/harness/agent-harness.ts`, `reducer.ts`, and restore tests.
      - Acceptance: idle restore writes nothing.

``[x]``/``[X]`` is done. Between id and title: an em dash, an en dash, or `` - `` with spaces.
``Dependencies:`` lists ids separated by commas and/or "and" (``C1–C3`` ranges are expanded),
or says ``none``. A value that is not such a list is ``bad_dependencies`` (the package gets
none). A checkbox that looks like a package but is not in this shape (``**R9** no title``, a
missing closing ``**``, ``Dependencies:`` without the bold id) is ``malformed_entry``; other
checkboxes (``- [ ] buy milk``) are ignored. Lines indented below an entry are its bullets,
until a heading, another entry, or a line that is not indented.

**Bullets.** ``Primary files:`` or ``Files:`` give files: backticked spans that look like
paths (a ``/``, a ``*``, or a file extension; ``npm run check`` or ``JsonlSessionRepo`` are
not). A bare name (``session.ts``) lies in the directory of the previous path of the same
bullet; with no previous path it is the one path of the document with that basename, if
exactly one backticked path has it, else the repository-root path ``session.ts`` (a new
file beside the others, not one at every depth: write ``**/session.ts`` for that). A clause
that says not to touch files ("Do not edit `x.ts`") gives none; from that clause on, the
bullet is kept in the description.
``Checks:`` gives backticked shell commands, in order. ``Acceptance:`` gives the acceptance
text. Every other bullet (``Landed coverage:`` too) is description, as Markdown.

**Tracks.** ``### Track X — title`` (``X`` may be ``C/N``) puts the packages below it in track
``X`` until a heading of the same or a higher level (``####`` does not end it). A heading with
the id of an earlier track continues that track. The track's prose (paragraphs outside its
packages) may say what its packages own. A sentence counts when it uses the word own, owns or
owned (not "owner", "ownership") and

* nothing before that word names a package of the document: "These packages all own `x` and
  merge L1 → L2 → L3" is the track's, "R3 is the first package ... that owns `x`" is R3's;
* the verb is not negated ("does not own").

The backticked paths after the verb, up to the end of its clause (a ``;`` or a negation: "own
`x`; they may not modify `y`"), are the track's files; a bare name is the document's one path
with that basename, else the repository-root path. A package naming no files of its own
takes its track's, with ``files_from_track``.

**Reservations.** ``**Reserved: ID by @user.**`` (``**Reserved: A, B by @user.**`` for
several) reserves packages; ``**Reserved: @user.**`` or ``**In progress and reserved:
@user.**`` reserves the whole track it stands in. Text in backticks never reserves (a document
may quote the template). A reservation whose ids cannot be read is ``malformed_reservation``.

**Ownership tables** and **merge orders** (``A → B → C``) are read by ``coord.spec.orders``;
a chain in a track's prose is also the track's ``merge_order``.

**What is not read** (``coord.spec.blocks``): fenced code blocks, indented code blocks and
HTML comments (``<!-- … -->``). A package shown in an example or commented out is no package,
a reservation there reserves nothing, and ``coord spec sync`` never ticks its box.

**coord's dialect** (beyond the reference document): ``Files:`` as a synonym of ``Primary
files:``, ``Checks:`` with backticked commands, and a document-level line ``Escalate to:
<contact>`` (may be bold or a list item; the first one counts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from coord.errors import InvalidInput
from coord.limits import MAX_SPEC_BYTES, MAX_SPEC_PACKAGES
from coord.spec import blocks, orders
from coord.spec.blocks import BULLET
from coord.spec.document import DocReservation, Package, Problem, SpecDocument, Track
from coord.spec.paths import Resolver, clean_path, files_and_note, looks_like_path, owned_paths
from coord.spec.syntax import (
    CODE_SPAN,
    DEPENDENCIES,
    ENTRY,
    ENTRY_SHAPE,
    NEAR_MISS,
    PACKAGE_RESERVATION,
    TRACK_RESERVATION,
    IdBudget,
    parse_id_list,
)

# Linear time on any line (``coord.spec.syntax``): the heading's closing #s and a value's
# closing "." are cut off by hand, not by a lazy group before an optional one, which tried
# every split of a crafted 120 KB heading (99 s) or a 12 KB Dependencies value (6 s).
_HEADING_START = re.compile(r" {0,3}(?P<hashes>#{1,6})[ \t]++")
_PERIOD_THEN_BLANK = re.compile(r"\.\s")
_TRACK = re.compile(r"Track[ \t]+(?P<id>[\w/.&+-]+?)(?:[ \t]*[—–][ \t]*|[ \t]+-[ \t]+|[ \t]*$)")
_LABEL = re.compile(
    r"(?:\*\*)?(?P<label>primary files|files|checks|acceptance)(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*",
    re.I,
)
_ESCALATE = re.compile(r"(?:[-*+][ \t]+)?(?:\*\*)?Escalate to[ \t]*:(?:\*\*)?[ \t]*(?P<v>.*)", re.I)

__all__ = ["parse", "parse_file"]


def parse_file(path: str | Path) -> SpecDocument:
    """Parse the document at ``path`` (UTF-8; ``InvalidInput`` if it is not), with its
    progress file merged in when one lies beside it (``coord.spec.progress``)."""
    from coord.spec import progress

    beside = progress.progress_path(path)
    progress_text = _read_utf8(beside) if beside.is_file() else None
    return progress.read(_read_utf8(path), str(path), progress_text, str(beside))


def _read_utf8(path: str | Path) -> str:
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInput(
            f"{path} is not UTF-8 text (invalid byte at offset {error.start}): "
            "save the document as UTF-8 and try again",
            path=str(path),
        ) from None


def parse(text: str, path: str = "<doc>") -> SpecDocument:
    """The packages, tracks, reservations and problems of a Markdown document.

    ``InvalidInput``, naming the line, for a document past the limits of ``coord.limits``:
    ``MAX_SPEC_BYTES`` of UTF-8, ``MAX_SPEC_PACKAGES`` packages, ``MAX_SPEC_IDS`` ids named."""
    _refuse_oversized(text, path)
    return _Parser(path).run(text)


def _refuse_oversized(text: str, path: str) -> None:
    if len(text) * 4 <= MAX_SPEC_BYTES:
        return  # cheap: no text of this many characters can be over
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_SPEC_BYTES:
        return
    line = text.encode("utf-8", "surrogatepass")[:MAX_SPEC_BYTES].count(b"\n") + 1
    raise InvalidInput(
        f"{path}:{line}: the document is {size} bytes, over the limit of {MAX_SPEC_BYTES} "
        f"bytes from this line on: split it into several documents",
        path=path,
        line=line,
        limit=MAX_SPEC_BYTES,
    )


def heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` of an ATX heading line, its closing ``#``s dropped, else None."""
    start = _HEADING_START.match(line)
    if start is None:
        return None
    text = line[start.end() :].rstrip(" \t")
    closing = text.rstrip("#")
    if len(closing) < len(text) and closing[-1:] in (" ", "\t"):
        text = closing.rstrip(" \t")  # "## Title ##": the #s after a blank close it
    return len(start["hashes"]), text


def value_and_after(value: str) -> tuple[str, str]:
    """A field's value and the text after it: ``"A, B. More."`` → ``("A, B", "More.")``;
    the value ends at the first period followed by a blank, or at a closing period."""
    stripped = value.rstrip()
    end = len(stripped) - 1 if stripped.endswith(".") else len(stripped)
    period = _PERIOD_THEN_BLANK.search(value, 0, end + 2)
    if period is not None and period.start() < end:
        return value[: period.start()], value[period.end() :].lstrip()
    return value[:end], ""


@dataclass(slots=True)
class _Bullet:
    line: int
    indent: int
    lines: list[str]  # the first is the text after the bullet marker


@dataclass(slots=True)
class _OpenPackage:
    package: Package
    indent: int
    bullets: list[_Bullet] = field(default_factory=list)
    entry_note: str = ""  # text after the Dependencies list on the entry line


@dataclass(slots=True)
class _TrackProse:
    track: Track
    paragraphs: list[tuple[int, str]] = field(default_factory=list)  # (first line, text)


class _Parser:
    """One pass over the lines collects raw parts; ``_finish`` resolves what needs the whole
    document (bare file names, package ids in prose)."""

    def __init__(self, path: str) -> None:
        self.doc = SpecDocument(path=path)
        self.open: _OpenPackage | None = None
        self.packages: list[_OpenPackage] = []
        self.track: _TrackProse | None = None
        self.track_level = 0
        self.tracks: dict[str, _TrackProse] = {}
        self.paragraph: list[str] = []
        self.paragraph_line = 0
        self.number = 0  # the line being read
        self.table: list[str] = []
        self.code_in_package = False  # the code block being read is a package bullet's
        self.paths: set[str] = set()  # every backticked path with a "/", for bare names
        self.chains: list[tuple[list[str], _TrackProse | None]] = []
        self.ids = IdBudget(path)  # the package ids the document may still name
        self.table_line = 0

    def run(self, text: str) -> SpecDocument:
        for line in blocks.lines(text):
            if line.kind == blocks.TEXT:
                self._line(line.number, line.text, line.indent)
            else:
                self._code(line)
        self._close_package()
        self._end_block()
        self._finish()
        return self.doc

    # -- the line pass

    def _code(self, line: blocks.Line) -> None:
        """Code is never read, but inside a package's bullet it is the bullet's text."""
        stripped, indent = line.text.lstrip(), line.indent
        if line.kind == blocks.CODE or line.opens:
            in_package = self.open is not None and indent > self.open.indent
            self.code_in_package = in_package and bool(self.open and self.open.bullets)
            if not self.code_in_package:
                self._end_block()
                if line.opens:  # a fence at the package's margin ends it
                    self._close_package()
                return
        if self.code_in_package and self.open is not None:
            self._continue_bullet(indent, stripped)

    def _line(self, number: int, line: str, indent: int) -> None:
        self.number = self.ids.line = number
        stripped = line.lstrip()
        if not stripped:
            self._end_block()
            return
        in_package = self.open is not None and indent > self.open.indent
        self._scan(number, stripped)
        found = heading(line)
        if found is not None:
            self._close_package()
            self._end_block()
            self._heading(number, *found)
            return
        entry = ENTRY.fullmatch(stripped)
        if entry is not None:
            self._close_package()
            self._end_block()
            self._chains(stripped, None)
            self._entry(number, indent, entry)
            return
        if NEAR_MISS.match(stripped):
            self._close_package()
            self._end_block()
            self.doc.problems.append(
                Problem(
                    "malformed_entry",
                    number,
                    f"line {number} looks like a work package but is not in the expected shape "
                    f"{ENTRY_SHAPE}; fix the line, or it is not read as a package",
                )
            )
            return
        if in_package and self.open is not None:
            self._chains(stripped, None)
            self._package_line(number, indent, line)
            return
        self._close_package()
        self._document_line(indent, stripped)

    def _scan(self, number: int, text: str) -> None:
        """What any line outside fenced code may carry: paths and reservations."""
        if "`" in text:
            for span in CODE_SPAN.findall(text):
                if "/" in span and looks_like_path(span):
                    self.paths.add(clean_path(span))
        if "reserved" not in text.casefold():
            return  # the cheap test first: most lines reserve nothing
        unquoted = CODE_SPAN.sub("", text)
        for match in PACKAGE_RESERVATION.finditer(unquoted):
            ids = parse_id_list(match["ids"], budget=self.ids)
            if ids is None:
                self.doc.problems.append(
                    Problem(
                        "malformed_reservation",
                        number,
                        f"line {number}: cannot read the package ids in {match.group(0)!r}; "
                        "write `**Reserved: ID by @user.**` or `**Reserved: A, B by @user.**`",
                    )
                )
            for package_id in ids or []:
                self.doc.reservations.append(DocReservation(match["user"], number, package_id))
        for match in TRACK_RESERVATION.finditer(unquoted):
            track = self.track.track.id if self.track else None
            self.doc.reservations.append(DocReservation(match["user"], number, track=track))

    def _heading(self, number: int, level: int, text: str) -> None:
        if self.track is not None and level <= self.track_level:
            self.track = None
        match = _TRACK.match(text)
        if match is None:
            return
        title = text[match.end() :].strip()
        prose = self.tracks.get(match["id"])
        if prose is None:
            prose = _TrackProse(Track(match["id"], title, number))
            self.tracks[match["id"]] = prose
            self.doc.tracks.append(prose.track)
        self.track, self.track_level = prose, level

    def _entry(self, number: int, indent: int, entry: re.Match[str]) -> None:
        if len(self.doc.packages) >= MAX_SPEC_PACKAGES:
            raise InvalidInput(
                f"{self.doc.path}:{number}: more than {MAX_SPEC_PACKAGES} work packages; the "
                f"limit is {MAX_SPEC_PACKAGES} (the board imports no more from one document): "
                "split the document",
                path=self.doc.path,
                line=number,
                limit=MAX_SPEC_PACKAGES,
            )
        package = Package(
            id=entry["id"],
            title=entry["title"].strip().rstrip(".").strip(),
            done=entry["mark"] != " ",
            line=number,
            track=self.track.track.id if self.track else None,
        )
        self.open = _OpenPackage(package, indent)
        self.packages.append(self.open)
        self.doc.packages.append(package)
        rest = entry["rest"].strip()
        dependencies = DEPENDENCIES.search(rest)
        if dependencies is None:
            self.open.entry_note = rest
            return
        value, after = value_and_after(dependencies["value"])
        self.open.entry_note = " ".join(
            part for part in (rest[: dependencies.start()].strip(), after or "") if part
        )
        ids = parse_id_list(value, budget=self.ids)
        if ids is None:
            self.doc.problems.append(
                Problem(
                    "bad_dependencies",
                    number,
                    f"line {number}: the dependencies of {package.id} ({value.strip()!r}) are not "
                    "a list of package ids; write `Dependencies: A, B.` or `Dependencies: none.`",
                    package.id,
                )
            )
        package.dependencies = ids or []

    def _package_line(self, number: int, indent: int, line: str) -> None:
        assert self.open is not None
        bullets = self.open.bullets
        stripped = line.lstrip()
        marker = BULLET.match(stripped)
        if marker is not None and (not bullets or indent <= bullets[0].indent):
            bullets.append(_Bullet(number, indent, [stripped[marker.end() :]]))
        elif bullets:
            self._continue_bullet(indent, stripped)
        else:  # indented text before any bullet: a description paragraph of its own
            bullets.append(_Bullet(number, indent, [stripped]))

    def _continue_bullet(self, indent: int, stripped: str) -> None:
        """A line of the open package's last bullet, indented relative to that bullet."""
        assert self.open is not None
        bullet = self.open.bullets[-1]
        bullet.lines.append(" " * max(indent - bullet.indent, 0) + stripped)

    def _document_line(self, indent: int, stripped: str) -> None:
        escalate = _ESCALATE.fullmatch(stripped)
        if escalate is not None and self.doc.escalate_to is None:
            self.doc.escalate_to = escalate["v"].strip().strip("*").strip().rstrip(".").strip()
        if stripped.startswith("|"):
            self._end_paragraph()
            if not self.table:
                self.table_line = self.number
            self.table.append(stripped)
            return
        self._end_table()
        if indent == 0 and not BULLET.match(stripped):
            if not self.paragraph:
                self.paragraph_line = self.number
            self.paragraph.append(stripped)
            self._chains(stripped, self.track)
        else:  # a list or an indented block: not a track's prose paragraph
            self._end_paragraph()
            self._chains(stripped, None)

    def _chains(self, text: str, prose_track: _TrackProse | None) -> None:
        self.chains += [(tokens, prose_track) for tokens in orders.chains(text)]

    def _close_package(self) -> None:
        self.open = None

    def _end_block(self) -> None:
        self._end_paragraph()
        self._end_table()

    def _end_paragraph(self) -> None:
        if self.paragraph and self.track is not None:
            self.track.paragraphs.append((self.paragraph_line, " ".join(self.paragraph)))
        self.paragraph = []

    def _end_table(self) -> None:
        rows, self.table = self.table, []
        if rows:
            self.ids.line = self.table_line
            self.doc.ownership += orders.ownership(rows, self.ids)

    # -- what needs the whole document

    def _finish(self) -> None:
        ids = {package.id for package in self.doc.packages}
        resolver = Resolver(self.paths)
        for open_package in self.packages:
            _fill_from_bullets(open_package, resolver)
        for prose in self.tracks.values():
            for line, paragraph in prose.paragraphs:
                resolver.line = line
                for path in owned_paths(paragraph, ids, resolver):
                    if path not in prose.track.files:
                        prose.track.files.append(path)
        for package in self.doc.packages:
            track = self.tracks.get(package.track) if package.track else None
            if not package.files and track is not None and track.track.files:
                package.files = list(track.track.files)
                package.files_from_track = True
        for tokens, chain_track in self.chains:
            for run in orders.id_runs(tokens, ids):
                self.doc.merge_orders.append(run)
                if chain_track is not None:
                    chain_track.track.merge_order.append(run)
        self.doc.root_names = sorted(set(resolver.rooted))


def _fill_from_bullets(open_package: _OpenPackage, resolver: Resolver) -> None:
    package = open_package.package
    description = [open_package.entry_note] if open_package.entry_note else []
    acceptance: list[str] = []
    for bullet in open_package.bullets:
        label = _LABEL.match(bullet.lines[0])
        kind = label["label"].casefold() if label else ""
        content = "\n".join([bullet.lines[0][label.end() if label else 0 :], *bullet.lines[1:]])
        if kind in ("primary files", "files"):
            resolver.line = bullet.line
            files, note = files_and_note(content, resolver)
            package.files.extend(path for path in files if path not in package.files)
            if note:
                description.append(f"- {note}")
        elif kind == "checks":
            package.checks.extend(CODE_SPAN.findall(content))
        elif kind == "acceptance":
            acceptance.append(content.strip())
        else:
            description.append("\n".join([f"- {bullet.lines[0]}", *bullet.lines[1:]]))
    package.description = "\n".join(description)
    package.acceptance = "\n".join(acceptance)
