"""The files a document names: which backticked spans are paths, and what a bare name means.

A ``Primary files:`` (or ``Files:``) bullet gives a package its files; a track's prose may say
what the track's packages *own*. Rules (the parser's docstring has them with examples):

* a backticked span is a path when it looks like one: a ``/``, a ``*``, or a file extension
  (``npm run check`` and ``JsonlSessionRepo`` are not);
* a bare name lies in the directory of the previous path of the same bullet; with none, it
  is the document's one path with that basename, else the repository-root path ``name``
  (never every depth: who means that writes ``**/name``). ``coord spec lint`` warns where the
  repository has files of that name only deeper;
* a clause that says not to touch files ("Do not edit `x.ts`") gives none;
* an ownership sentence counts when nothing before "own" names a package and the verb is not
  negated; its paths end with its clause.
"""

from __future__ import annotations

import posixpath
import re

from coord.spec.syntax import CODE_SPAN, TOKEN, mask_code

_EXTENSION = re.compile(r"\.(?=[A-Za-z0-9]{1,10}$)[0-9]*[A-Za-z]")  # .ts, .md, .gitignore
_PATH_CHARS = re.compile(r"[\w./*?\[\]{}+~-]+")
_NEGATION = re.compile(r"\b(?:not|never|cannot)\b|n't\b", re.I)
_OWN = re.compile(r"\b(?:own|owns|owned)\b", re.I)
_CLAUSE_STOP = re.compile(r";|\b(?:not|never|cannot)\b|n't\b", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CLAUSE_END = re.compile(r"(?<=[.!?])\s+|;\s*|\n")


class Resolver:
    """Bare file names to paths: the previous path's directory, else a unique basename, else
    the repository root."""

    def __init__(self, paths: set[str]) -> None:
        """``paths``: every backticked path of the document with a ``/`` in it."""
        self.line = 0  # where the text being read starts, for ``rooted``
        # (line, name) of each bare name read as a repository-root path
        self.rooted: list[tuple[int, str]] = []
        self.basenames: dict[str, list[str]] = {}
        for path in sorted(paths):
            self.basenames.setdefault(posixpath.basename(path.rstrip("/")), []).append(path)

    def paths(self, text: str, *, relative: bool = True) -> list[str]:
        """The path-like backticked spans of ``text``, resolved, in order, without repeats.

        ``relative``: a bare name lies in the directory of the previous path of ``text``.
        """
        found: list[str] = []
        directory: str | None = None
        for span in CODE_SPAN.findall(text):
            if not looks_like_path(span):
                continue
            path = clean_path(span)
            if "/" not in path.rstrip("/"):
                path = self.bare(path, directory)
            if relative:
                directory = posixpath.dirname(path)
            if path not in found:
                found.append(path)
        return found

    def bare(self, name: str, directory: str | None) -> str:
        if directory is None:
            candidates = self.basenames.get(name.rstrip("/"), [])
            if len(candidates) == 1:
                return candidates[0]
            directory = ""
        if directory:
            return posixpath.join(directory, name)
        self.rooted.append((self.line, name))
        return name


def files_and_note(content: str, resolver: Resolver) -> tuple[list[str], str]:
    """Files of a files bullet, and the bullet from its first "do not touch" clause on."""
    masked = mask_code(content)
    for start, end in _pieces(masked, _CLAUSE_END):
        if _NEGATION.search(masked, start, end):
            return resolver.paths(content[:start]), content[start:].strip()
    return resolver.paths(content), ""


def owned_paths(paragraph: str, ids: set[str], resolver: Resolver) -> list[str]:
    """The paths a track's paragraph says its packages own."""
    owned: list[str] = []
    masked = mask_code(paragraph)
    for start, end in _pieces(masked, _SENTENCE_END):
        verb = _OWN.search(masked, start, end)
        if verb is None:
            continue
        subject = masked[start : verb.start()]
        if any(token in ids for token in re.findall(TOKEN, subject)):
            continue  # about one package, not the track
        if _NEGATION.search(" ".join(subject.split()[-3:])):
            continue
        # the object ends with its clause: "own `x`; they may not modify `y`"
        object_end = _CLAUSE_STOP.search(masked, verb.end(), end)
        stop = object_end.start() if object_end else end
        owned.extend(resolver.paths(paragraph[verb.end() : stop], relative=False))
    return owned


def looks_like_path(span: str) -> bool:
    if not _PATH_CHARS.fullmatch(span) or span.strip("./") == "":
        return False
    return "/" in span or "*" in span or _EXTENSION.search(span) is not None


def clean_path(span: str) -> str:
    while span.startswith("./"):
        span = span[2:]
    return span.lstrip("/") or span


def _pieces(masked: str, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    """Spans between boundaries of a ``mask_code`` text (so none falls inside backticks)."""
    spans, start = [], 0
    for match in boundary.finditer(masked):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(masked)))
    return spans
