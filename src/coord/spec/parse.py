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
exactly one backticked path has it, else ``**/name``. A clause that says not to touch files
("Do not edit `x.ts`") gives none; from that clause on, the bullet is kept in the description.
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
with that basename, else ``**/name``. A package naming no files of its own takes its track's,
with ``files_from_track``.

**Reservations.** ``**Reserved: ID by @user.**`` (``**Reserved: A, B by @user.**`` for
several) reserves packages; ``**Reserved: @user.**`` or ``**In progress and reserved:
@user.**`` reserves the whole track it stands in. Text in backticks never reserves (a document
may quote the template). A reservation whose ids cannot be read is ``malformed_reservation``.

**Ownership tables**: a table whose header has a column containing "package" (or, failing
that, "owner", but not the first column) maps the first column's text to the ids of that
column (``C1–C3``, ``I5/H0``, ``A, B``). Rows whose cell is not a list of ids are skipped.

**Merge orders**: every chain ``A → B → C`` (or ``->``) on one line, bold or not, where each
id is a package of the document or shaped like one (letters then digits). In a track's prose
it is also the track's ``merge_order``. Fenced code blocks are never read.

**coord's dialect** (beyond the reference document): ``Files:`` as a synonym of ``Primary
files:``, ``Checks:`` with backticked commands, and a document-level line ``Escalate to:
<contact>`` (may be bold or a list item; the first one counts).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from coord.errors import InvalidInput
from coord.spec.document import DocReservation, Package, Problem, SpecDocument, Track

ID = r"[A-Za-z][A-Za-z0-9_.-]*"
_ID = re.compile(ID)
# in running text an id does not end in "." or "-": "merge R0 → R3." is R3
_TOKEN = r"[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?"
_ID_SHAPED = re.compile(r"[A-Za-z]+[0-9][A-Za-z0-9_.-]*")  # R3, QA1, C1b
_RANGE = re.compile(r"(?P<prefix>[A-Za-z]+)(?P<first>\d+)\s*[–—-]\s*(?P=prefix)?(?P<last>\d+)")
_MAX_RANGE = 1000

_CHECKBOX = r"(?:[-*+]|\d+[.)])[ \t]+\[(?P<mark>[ xX])\][ \t]+"
_ENTRY = re.compile(
    _CHECKBOX + rf"\*\*(?P<id>{ID})(?:[ \t]*[—–][ \t]*|[ \t]+-[ \t]+)(?P<title>.+?)\*\*(?P<rest>.*)"
)
# looks like a package but is not one: a bold id, an unbolded "R9 —", or a Dependencies field
_NEAR_MISS = re.compile(
    _CHECKBOX + r"(?:\*\*\s*[A-Za-z]+[0-9]|[A-Za-z]+[0-9]\S*\s+[—–-]\s|.*\bDependencies\s*:)",
    re.I,
)
_DEPENDENCIES = re.compile(r"\bDependencies\s*:\s*(?P<value>.*)", re.I)
_VALUE_AND_AFTER = re.compile(r"(?P<value>.*?)(?:\.\s+(?P<after>.*)|\.?\s*)", re.S)
_ENTRY_SHAPE = "`- [ ] **ID — title.** Dependencies: A, B.` (or `Dependencies: none.`)"

_HEADING = re.compile(r" {0,3}(?P<hashes>#{1,6})[ \t]+(?P<text>.*?)(?:[ \t]+#+)?[ \t]*")
_TRACK = re.compile(r"Track[ \t]+(?P<id>[\w/.&+-]+?)(?:[ \t]*[—–][ \t]*|[ \t]+-[ \t]+|[ \t]*$)")
_FENCE = re.compile(r"(`{3,}|~{3,})")
_BULLET = re.compile(r"(?:[-*+]|\d+[.)])(?:[ \t]+|$)")
_LABEL = re.compile(
    r"(?:\*\*)?(?P<label>primary files|files|checks|acceptance)(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]*",
    re.I,
)
_CODE_SPAN = re.compile(r"`([^`\n]*)`")
_EXTENSION = re.compile(r"\.(?=[A-Za-z0-9]{1,10}$)[0-9]*[A-Za-z]")  # .ts, .md, .gitignore
_PATH_CHARS = re.compile(r"[\w./*?\[\]{}+~-]+")
_NEGATION = re.compile(r"\b(?:not|never|cannot)\b|n't\b", re.I)
_OWN = re.compile(r"\b(?:own|owns|owned)\b", re.I)
_CLAUSE_STOP = re.compile(r";|\b(?:not|never|cannot)\b|n't\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CLAUSE_END = re.compile(r"(?<=[.!?])\s+|;\s*|\n")
_CHAIN = re.compile(rf"(?<![\w.-]){_TOKEN}(?:[ \t]*(?:→|->)[ \t]*{_TOKEN})+")
_ARROW = re.compile(r"\s*(?:→|->)\s*")
_USER = r"@(?P<user>[A-Za-z0-9][\w.-]*?)\.?\*\*"
_PACKAGE_RESERVATION = re.compile(
    r"\*\*Reserved:[ \t]*(?P<ids>[^*@]+?)[ \t]+by[ \t]+" + _USER, re.I
)
_TRACK_RESERVATION = re.compile(r"\*\*(?:[^*@]*\s)?reserved:[ \t]*" + _USER, re.I)
_ESCALATE = re.compile(r"(?:[-*+][ \t]+)?(?:\*\*)?Escalate to[ \t]*:(?:\*\*)?[ \t]*(?P<v>.*)", re.I)
_TABLE_SEPARATOR = re.compile(r"\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?")


def parse_file(path: str | Path) -> SpecDocument:
    """Parse the document at ``path`` (UTF-8; ``InvalidInput`` if it is not), with its
    progress file merged in when one lies beside it (``coord.spec.progress``)."""
    from coord.spec import progress

    doc = parse(_read_utf8(path), str(path))
    beside = progress.progress_path(path)
    if beside.is_file():
        progress.merge(doc, progress.parse_progress(_read_utf8(beside), str(beside)))
    return doc


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
    """The packages, tracks, reservations and problems of a Markdown document."""
    return _Parser(path).run(text)


def parse_id_list(text: str, *, slashes: bool = False) -> list[str] | None:
    """``"A, B and C1–C3"`` as ids, ``[]`` for "none", None if it is not a list of ids."""
    text = text.strip().strip("*").strip()
    if text.casefold() == "none":
        return []
    separators = r",|\band\b|/" if slashes else r",|\band\b"
    ids: list[str] = []
    for piece in re.split(separators, text):
        token = piece.strip().strip("`*").strip()
        if not token:
            continue
        expanded = _expand_range(token)
        if expanded is not None:
            ids.extend(expanded)
        elif _ID.fullmatch(token):
            ids.append(token)
        else:
            return None
    return ids or None


def _expand_range(token: str) -> list[str] | None:
    match = _RANGE.fullmatch(token)
    if match is None:
        return None
    first, last = int(match["first"]), int(match["last"])
    if not 0 <= last - first <= _MAX_RANGE:
        return None
    return [f"{match['prefix']}{n}" for n in range(first, last + 1)]


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
    paragraphs: list[str] = field(default_factory=list)


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
        self.table: list[str] = []
        self.fence: str | None = None
        self.fence_in_package = False
        self.paths: set[str] = set()  # every backticked path with a "/", for bare names
        self.chains: list[tuple[list[str], _TrackProse | None]] = []

    def run(self, text: str) -> SpecDocument:
        for number, raw in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
            self._line(number, raw.rstrip())
        self._close_package()
        self._end_block()
        self._finish()
        return self.doc

    # -- the line pass

    def _line(self, number: int, line: str) -> None:
        stripped = line.lstrip()
        indent = _indent_width(line)
        if self.fence is not None:
            if stripped.startswith(self.fence) and not stripped.strip(self.fence[0]):
                self.fence = None
            if self.fence_in_package and self.open is not None:
                self._continue_bullet(indent, stripped)
            return
        if not stripped:
            self._end_block()
            return
        fence = _FENCE.match(stripped)
        in_package = self.open is not None and indent > self.open.indent
        if fence is not None:
            self.fence = fence.group(1)
            self.fence_in_package = in_package and bool(self.open and self.open.bullets)
            if self.fence_in_package and self.open is not None:
                self._continue_bullet(indent, stripped)
            else:
                self._close_package()
                self._end_block()
            return
        self._scan(number, stripped)
        heading = _HEADING.fullmatch(line)
        if heading is not None:
            self._close_package()
            self._end_block()
            self._heading(number, len(heading["hashes"]), heading["text"])
            return
        entry = _ENTRY.fullmatch(stripped)
        if entry is not None:
            self._close_package()
            self._end_block()
            self._chains(stripped, None)
            self._entry(number, indent, entry)
            return
        if _NEAR_MISS.match(stripped):
            self._close_package()
            self._end_block()
            self.doc.problems.append(
                Problem(
                    "malformed_entry",
                    number,
                    f"line {number} looks like a work package but is not in the expected shape "
                    f"{_ENTRY_SHAPE}; fix the line, or it is not read as a package",
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
            for span in _CODE_SPAN.findall(text):
                if "/" in span and _looks_like_path(span):
                    self.paths.add(_clean_path(span))
        if "reserved" not in text.casefold():
            return  # the cheap test first: most lines reserve nothing
        unquoted = _CODE_SPAN.sub("", text)
        for match in _PACKAGE_RESERVATION.finditer(unquoted):
            ids = parse_id_list(match["ids"])
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
        for match in _TRACK_RESERVATION.finditer(unquoted):
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
        dependencies = _DEPENDENCIES.search(rest)
        if dependencies is None:
            self.open.entry_note = rest
            return
        split = _VALUE_AND_AFTER.fullmatch(dependencies["value"])
        value, after = (split["value"], split["after"]) if split else (dependencies["value"], "")
        self.open.entry_note = " ".join(
            part for part in (rest[: dependencies.start()].strip(), after or "") if part
        )
        ids = parse_id_list(value)
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
        marker = _BULLET.match(stripped)
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
            self.table.append(stripped)
            return
        self._end_table()
        if indent == 0 and not _BULLET.match(stripped):
            self.paragraph.append(stripped)
            self._chains(stripped, self.track)
        else:  # a list or an indented block: not a track's prose paragraph
            self._end_paragraph()
            self._chains(stripped, None)

    def _chains(self, text: str, prose_track: _TrackProse | None) -> None:
        if "→" not in text and "->" not in text:
            return
        for chain in _CHAIN.findall(text):
            self.chains.append((_ARROW.split(chain), prose_track))

    def _close_package(self) -> None:
        self.open = None

    def _end_block(self) -> None:
        self._end_paragraph()
        self._end_table()

    def _end_paragraph(self) -> None:
        if self.paragraph and self.track is not None:
            self.track.paragraphs.append(" ".join(self.paragraph))
        self.paragraph = []

    def _end_table(self) -> None:
        rows, self.table = self.table, []
        if len(rows) < 3 or not _TABLE_SEPARATOR.fullmatch(rows[1]):
            return
        header = [cell.casefold() for cell in _cells(rows[0])]
        column = next((i for i, cell in enumerate(header) if "package" in cell), None)
        if column is None:
            column = next((i for i, cell in enumerate(header) if "owner" in cell and i), None)
        if column is None:
            return
        surface_column = 1 if column == 0 else 0
        for row in rows[2:]:
            cells = _cells(row)
            if len(cells) <= max(column, surface_column):
                continue
            ids = parse_id_list(cells[column], slashes=True)
            if ids:
                self.doc.ownership.append((cells[surface_column], ids))

    # -- what needs the whole document

    def _finish(self) -> None:
        ids = {package.id for package in self.doc.packages}
        basenames: dict[str, list[str]] = {}
        for path in sorted(self.paths):
            basenames.setdefault(posixpath.basename(path.rstrip("/")), []).append(path)
        resolver = _Resolver(basenames)
        for open_package in self.packages:
            _fill_from_bullets(open_package, resolver)
        for prose in self.tracks.values():
            for paragraph in prose.paragraphs:
                for path in _owned_paths(paragraph, ids, resolver):
                    if path not in prose.track.files:
                        prose.track.files.append(path)
        for package in self.doc.packages:
            track = self.tracks.get(package.track) if package.track else None
            if not package.files and track is not None and track.track.files:
                package.files = list(track.track.files)
                package.files_from_track = True
        for tokens, chain_track in self.chains:
            for run in _id_runs(tokens, ids):
                self.doc.merge_orders.append(run)
                if chain_track is not None:
                    chain_track.track.merge_order.append(run)


class _Resolver:
    """Bare file names to paths: the previous path's directory, else a unique basename."""

    def __init__(self, basenames: dict[str, list[str]]) -> None:
        self.basenames = basenames

    def paths(self, text: str, *, relative: bool = True) -> list[str]:
        """The path-like backticked spans of ``text``, resolved, in order, without repeats.

        ``relative``: a bare name lies in the directory of the previous path of ``text``.
        """
        found: list[str] = []
        directory: str | None = None
        for span in _CODE_SPAN.findall(text):
            if not _looks_like_path(span):
                continue
            path = _clean_path(span)
            if "/" not in path.rstrip("/"):
                path = self.bare(path, directory)
            if relative:
                directory = posixpath.dirname(path)
            if path not in found:
                found.append(path)
        return found

    def bare(self, name: str, directory: str | None) -> str:
        if directory is not None:
            return posixpath.join(directory, name)
        candidates = self.basenames.get(name.rstrip("/"), [])
        return candidates[0] if len(candidates) == 1 else f"**/{name}"


def _fill_from_bullets(open_package: _OpenPackage, resolver: _Resolver) -> None:
    package = open_package.package
    description = [open_package.entry_note] if open_package.entry_note else []
    acceptance: list[str] = []
    for bullet in open_package.bullets:
        label = _LABEL.match(bullet.lines[0])
        kind = label["label"].casefold() if label else ""
        content = "\n".join([bullet.lines[0][label.end() if label else 0 :], *bullet.lines[1:]])
        if kind in ("primary files", "files"):
            files, note = _files_and_note(content, resolver)
            package.files.extend(path for path in files if path not in package.files)
            if note:
                description.append(f"- {note}")
        elif kind == "checks":
            package.checks.extend(_CODE_SPAN.findall(content))
        elif kind == "acceptance":
            acceptance.append(content.strip())
        else:
            description.append("\n".join([f"- {bullet.lines[0]}", *bullet.lines[1:]]))
    package.description = "\n".join(description)
    package.acceptance = "\n".join(acceptance)


def _files_and_note(content: str, resolver: _Resolver) -> tuple[list[str], str]:
    """Files of a files bullet, and the bullet from its first "do not touch" clause on."""
    masked = _mask_code(content)
    for start, end in _pieces(masked, _CLAUSE_END):
        if _NEGATION.search(masked, start, end):
            return resolver.paths(content[:start]), content[start:].strip()
    return resolver.paths(content), ""


def _owned_paths(paragraph: str, ids: set[str], resolver: _Resolver) -> list[str]:
    """The paths a track's paragraph says its packages own (rules in the module docstring)."""
    owned: list[str] = []
    masked = _mask_code(paragraph)
    for start, end in _pieces(masked, _SENTENCE_END):
        verb = _OWN.search(masked, start, end)
        if verb is None:
            continue
        subject = masked[start : verb.start()]
        if any(token in ids for token in re.findall(_TOKEN, subject)):
            continue  # about one package, not the track
        if _NEGATION.search(" ".join(subject.split()[-3:])):
            continue
        # the object ends with its clause: "own `x`; they may not modify `y`"
        object_end = _CLAUSE_STOP.search(masked, verb.end(), end)
        stop = object_end.start() if object_end else end
        owned.extend(resolver.paths(paragraph[verb.end() : stop], relative=False))
    return owned


def _pieces(masked: str, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    """Spans between boundaries of a ``_mask_code`` text (so none falls inside backticks)."""
    spans, start = [], 0
    for match in boundary.finditer(masked):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(masked)))
    return spans


def _mask_code(text: str) -> str:
    """``text`` with each backticked span blanked out to the same length."""
    return _CODE_SPAN.sub(lambda match: "`" + "x" * (len(match.group(0)) - 2) + "`", text)


def _id_runs(tokens: list[str], ids: set[str]) -> list[list[str]]:
    """The runs of two or more id-like tokens in an arrow chain."""
    runs: list[list[str]] = [[]]
    for token in tokens:
        if token in ids or _ID_SHAPED.fullmatch(token):
            runs[-1].append(token)
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if len(run) >= 2]


def _looks_like_path(span: str) -> bool:
    if not _PATH_CHARS.fullmatch(span) or span.strip("./") == "":
        return False
    return "/" in span or "*" in span or _EXTENSION.search(span) is not None


def _clean_path(span: str) -> str:
    while span.startswith("./"):
        span = span[2:]
    return span.lstrip("/") or span


def _cells(row: str) -> list[str]:
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)]


def _indent_width(line: str) -> int:
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width
