"""Reservation patterns: what a file reservation names, and when two reservations collide.

A reservation is stored in one canonical form: a repository-relative POSIX path or glob,
anchored at the repository root (``src/a.py``, ``src/**/*.py``, ``**/*.sql``, ``**``).
``normalize`` turns what was typed into that form; ``covers`` and ``overlaps`` take only
canonical forms. The edit guard imports this before every edit: stdlib ``os`` and ``re`` only.

How ``normalize`` reads its input:

* A literal (no ``*?[\\``) is a path relative to ``cwd``: ``Makefile`` typed at the root is
  the root ``Makefile``, not every ``Makefile`` as in ``.gitignore``. ``./``, ``..`` and
  repeated slashes are resolved lexically, then symlinks, so aliases compare equal.
* A glob follows gitignore. With a slash (other than a trailing one) it is anchored:
  ``src/*.py``, ``./*.sql``. Without one it matches at any depth below ``cwd``: ``*.sql``
  becomes ``**/*.sql``. ``*``, ``?``, ``[...]`` never match ``/``; ``**`` is zero or more
  directories. A backslash escapes a glob character (``\\*``); it is never a separator.
* A leading ``/`` is an absolute path if it lies in the repository, else gitignore's root
  anchor (``/src/*.py`` is ``src/*.py``), unless its first name exists at the filesystem
  root but not at the repository root (``/etc/passwd``): refused as outside.
* A trailing ``/`` (gitignore's "directories only") is dropped, erring on the safe side.
  ``src/**`` is ``src``: a directory covers everything under it.
* The repository itself (``.``, its absolute path, ``*``, ``**``) is ``**``.
* Refused, saying what to write instead: empty, NUL, surrounding whitespace, negation
  (``!x``), outside the repository (``../x``, a symlink leading out), ``.git`` internals,
  ``..`` after a glob, stray backslashes, malformed ``[...]``.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from coord.errors import InvalidInput
from coord.limits import MAX_PATTERN

TYPE_CHECKING = False  # typing costs ~10 ms at import; the edit guard runs before every edit
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import TypeVar

    T = TypeVar("T")
    S = TypeVar("S")
    Token = tuple[str, str]  # ("c", char) | ("*", "") | ("?", "") | ("[" or "[!", members)

OVERLAP_RULE = """\
A reservation covers the paths it names and everything beneath them: a directory covers its
whole subtree, a glob covers every path it matches and everything beneath those. Two
reservations overlap when some path could be covered by both. For literal paths the answer
is exact: src overlaps src/a.py, src/a.py does not overlap src/a.pyc, src/a does not
overlap src/ab. For globs it is conservative: it may report an overlap no real file has
(src/*.py against src/[ab].py), never miss one a real file has. Globs follow gitignore: *, ?
and [...] stay within one path segment, ** spans any number of directories, and a glob
without a slash matches at any depth (*.sql means **/*.sql). Literal paths are plain paths,
relative to where you are. Negations (!x) are refused.
"""

WHOLE_REPOSITORY = "**"
_GLOB_RE = re.compile(r"[*?\[\\]")
# a backslash escapes a glob character; before anything else it is a mistyped path, refused.
# This and _TOKEN_RE stay text until first used (re caches the compiled form): compiling
# them costs a quarter of a millisecond the edit guard's usual path never needs.
_ESCAPES_OK = r"(?:[^\\]|\\[*?\[\]\\!# ])*"


def explain_rule() -> str:
    return OVERLAP_RULE


def is_literal(pattern: str) -> bool:
    """No glob syntax: the pattern names exactly one path."""
    return _GLOB_RE.search(pattern) is None


def escape(path: str) -> str:
    """The pattern naming exactly ``path``, even one like ``app/[id].tsx``."""
    return _GLOB_RE.sub(r"\\\g<0>", path)


@lru_cache(maxsize=16384)
def literal_prefix(pattern: str) -> str:
    """The segments of a canonical pattern before its first glob ('' for ``**/x``).

    Every path a pattern covers starts with it, so two patterns can overlap only if one
    prefix is a segment-prefix of the other: a cheap filter before the full check.
    """
    segments = pattern.split("/")
    return "/".join(segments[: _first_glob(segments, glob=True)])


def normalize(
    pattern: str,
    repo_root: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    *,
    literal: bool = False,
) -> str:
    """The canonical form of a typed pattern, or ``InvalidInput`` saying what to write.

    ``literal=True`` reads a file path (the edit guard's input): nothing in it is a glob, so
    ``app/[id].tsx`` is that file; the repository root itself is refused.
    """
    _check_text(pattern, literal)
    root = os.path.realpath(repo_root)
    glob = not literal and not is_literal(pattern)
    parts = [part for part in pattern.split("/") if part not in ("", ".")]
    if pattern.startswith("/"):
        parts = _absolute_to_relative(pattern, parts, root, glob)
    else:
        # relative to cwd when cwd is inside the repository, else to the root
        start = _inside_segments(os.path.realpath(cwd), root) if cwd is not None else None
        floating = glob and "/" not in pattern.rstrip("/")  # gitignore: matches at any depth
        parts = (start or []) + ["**"] * floating + parts
    segments = _resolve_symlinks(_resolve_dots(parts, pattern, glob), root, glob, pattern)
    if any(segment.casefold() == ".git" for segment in segments):
        raise _refuse(pattern, "is inside .git, git's own metadata; reserve working-tree files")
    if literal:
        if not segments:
            raise _refuse(pattern, "is the repository root, not a file")
        return "/".join(segments)
    return _tidy(segments, pattern)


def _refuse(pattern: str, problem: str) -> InvalidInput:
    return InvalidInput(f"reservation pattern {pattern!r} {problem}", pattern=pattern)


def _check_text(pattern: str, literal: bool) -> None:
    if not isinstance(pattern, str) or not pattern.strip():
        raise InvalidInput(
            "empty reservation pattern: name a path or glob, like 'src/auth/**' or 'docs/api.md'",
            pattern=pattern,
        )
    if len(pattern) > MAX_PATTERN:
        raise _refuse(pattern[:60] + "...", f"is longer than {MAX_PATTERN} characters")
    if "\0" in pattern:
        raise _refuse(pattern, "contains a NUL character; remove it")
    if pattern != pattern.strip():
        raise _refuse(pattern, "has leading or trailing whitespace; remove it")
    if literal:
        return
    if pattern.startswith("!"):
        raise _refuse(
            pattern,
            "is a negation, which reservations do not support: reserve the paths you want "
            "instead (for a file whose name starts with '!', write './!name')",
        )
    if not re.fullmatch(_ESCAPES_OK, pattern):
        raise _refuse(
            pattern,
            "has a backslash that escapes no glob character: separate directories with '/', "
            "and write '\\*', '\\?' or '\\[' only for a literal '*', '?' or '['",
        )


def _first_glob(segments: list[str], glob: bool) -> int:
    if glob:
        return next((i for i, s in enumerate(segments) if not is_literal(s)), len(segments))
    return len(segments)


def _inside_segments(real: str, root: str) -> list[str] | None:
    """``real`` as repository-relative segments, or None when it is outside the repository."""
    relative = os.path.relpath(real, root).replace(os.sep, "/")
    if relative == ".." or relative.startswith("../"):
        return None
    return [s for s in relative.split("/") if s != "."]


def _absolute_to_relative(pattern: str, parts: list[str], root: str, glob: bool) -> list[str]:
    if not parts:
        raise _refuse(pattern, "is the filesystem root; to reserve the whole repository use '**'")
    first_glob = _first_glob(parts, glob)
    inside = _inside_segments(os.path.realpath("/" + "/".join(parts[:first_glob])), root)
    if inside is not None:
        return inside + parts[first_glob:]
    if os.path.lexists("/" + parts[0]) and not os.path.lexists(os.path.join(root, parts[0])):
        raise _refuse(pattern, "is outside the repository; name a path relative to its root")
    return parts  # gitignore's leading '/': anchored at the repository root


def _resolve_dots(segments: list[str], pattern: str, glob: bool) -> list[str]:
    resolved: list[str] = []
    for segment in segments:
        if segment != "..":
            resolved.append(segment)
        elif not resolved:
            raise _refuse(pattern, "leads outside the repository; name a path inside it")
        elif glob and not is_literal(resolved[-1]):
            raise _refuse(pattern, "has '..' after a glob; write the directory it means")
        else:
            resolved.pop()
    return resolved


def _resolve_symlinks(segments: list[str], root: str, glob: bool, pattern: str) -> list[str]:
    """Resolve symlinks in the literal leading part: aliases compare equal, escapes are caught."""
    first_glob = _first_glob(segments, glob)
    if first_glob == 0:
        return segments
    inside = _inside_segments(os.path.realpath(os.path.join(root, *segments[:first_glob])), root)
    if inside is None:
        raise _refuse(pattern, "leads outside the repository through a symlink")
    return inside + segments[first_glob:]


def _tidy(segments: list[str], pattern: str) -> str:
    """One spelling per reservation: 'a/**/**/b' is 'a/**/b', 'src/**' is 'src'."""
    tidy = [s for i, s in enumerate(segments) if not (s == "**" and i and segments[i - 1] == "**")]
    while len(tidy) > 1 and tidy[-1] == "**":
        tidy.pop()  # a reservation already covers everything beneath what it matches
    # '**'s and at most one '*' match every top-level name, so they cover every path
    if not tidy or (set(tidy) <= {"**", "*"} and tidy.count("*") <= 1):
        return WHOLE_REPOSITORY
    try:
        for kind, members in (token for segment in tidy for token in _tokens(segment)):
            if kind.startswith("["):
                _class_matcher(kind, members)
    except re.error as exc:
        raise _refuse(pattern, f"has a malformed [...] ({exc}); fix it or escape the '['") from None
    return "/".join(tidy)


# An escaped character | [...] read as gitignore and pathspec do ('!' or '^' negates, a ']'
# first is a member, an unclosed '[' is an ordinary character) | a wildcard | any character.
_TOKEN_RE = r"\\(.)|\[([!^]?+)(\]?+[^\]]*)\]|([*?])|(.)"


@lru_cache(maxsize=16384)
def _tokens(segment: str) -> tuple[Token, ...]:
    tokens: list[Token] = []
    for escaped, negated, members, wildcard, char in re.findall(_TOKEN_RE, segment, re.DOTALL):
        if members:
            tokens.append(("[!" if negated else "[", members))
        else:
            tokens.append((wildcard, "") if wildcard else ("c", escaped or char))
    return tuple(tokens)


@lru_cache(maxsize=4096)
def _class_matcher(kind: str, members: str) -> re.Pattern[str]:
    last = len(members) - 1
    body = "".join(
        "-" if c == "-" and 0 < k < last else re.escape(c) for k, c in enumerate(members)
    )
    return re.compile(("[^" if kind == "[!" else "[") + body + "]")


def _char_fits(token: Token, char: str) -> bool:
    kind, text = token
    if kind == "c":
        return text == char
    return kind == "?" or _class_matcher(kind, text).fullmatch(char) is not None


def _chars_meet(t: Token, u: Token) -> bool:
    """Can one character (never '/') satisfy both single-character tokens?"""
    if t[0] == "?" or u[0] == "?":
        return True
    if t[0] == "c" or u[0] == "c":
        return _char_fits(u, t[1]) if t[0] == "c" else _char_fits(t, u[1])
    if t[0] == u[0] == "[!":
        return True  # each excludes finitely many characters
    # Unions of ranges meet at a range start or just past an excluded range: try those.
    near = {chr(n) for c in t[1] + u[1] for n in range(ord(c) - 1, ord(c) + 2) if 0 <= n < 0x110000}
    return any(_char_fits(t, c) and _char_fits(u, c) for c in (near | {"0"}) - {"/"})


def _after_skips(states: set[int], stars: list[bool]) -> set[int]:
    """Add the states reached by letting a '*' (or '**') match nothing."""
    out = set(states)
    for i in states:
        while i < len(stars) and stars[i]:
            i += 1
            out.add(i)
    return out


def _walk(
    items: Sequence[T], stars: list[bool], word: Iterable[S], fits: Callable[[T, S], bool]
) -> bool:
    """Does a glob (items, some of them stars) match a word? NFA walk: no backtracking."""
    states = _after_skips({0}, stars)
    for symbol in word:
        moved = {
            i + (not stars[i])
            for i in states
            if i < len(items) and (stars[i] or fits(items[i], symbol))
        }
        states = _after_skips(moved, stars)
        if not states:
            return False
    return len(items) in states


def _meet(x: Sequence[T], y: Sequence[T], star: T, items_meet: Callable[[T, T], bool]) -> bool:
    """Do two globs (sequences with star items) match a common word?

    A search over positions (i, j) in both, iterative so long patterns cannot overflow the
    stack. Two stars eating together never needs a step of its own: the skips cover it.
    """
    todo, seen = [(0, 0)], {(0, 0)}
    while todo:
        i, j = todo.pop()
        if i == len(x) and j == len(y):
            return True
        x_star, y_star = i < len(x) and x[i] == star, j < len(y) and y[j] == star
        steps = [(i + 1, j)] * x_star + [(i, j + 1)] * y_star  # a star matches nothing
        if i < len(x) and j < len(y) and not (x_star and y_star):
            if x_star or y_star:  # a star eats what the other side produces
                steps.append((i, j + 1) if x_star else (i + 1, j))
            elif items_meet(x[i], y[j]):
                steps.append((i + 1, j + 1))
        for step in steps:
            if step not in seen:
                seen.add(step)
                todo.append(step)
    return False


@lru_cache(maxsize=16384)
def _segment_matches(glob: str, name: str) -> bool:
    if is_literal(glob):
        return glob == name
    tokens = _tokens(glob)
    return _walk(tokens, [kind == "*" for kind, _ in tokens], name, _char_fits)


@lru_cache(maxsize=65536)
def _segment_globs_meet(g: str, h: str) -> bool:
    """Is there a file name both segment globs match?"""
    if is_literal(g) or is_literal(h):
        return _segment_matches(h, g) if is_literal(g) else _segment_matches(g, h)
    return _meet(_tokens(g), _tokens(h), ("*", ""), _chars_meet)


def covers(pattern: str, path: str) -> bool:
    """Does canonical ``pattern`` match canonical file ``path`` or one of its directories?"""
    if is_literal(pattern):
        return path == pattern or path.startswith(pattern + "/")
    prefix = literal_prefix(pattern)
    if prefix and path != prefix and not path.startswith(prefix + "/"):
        return False
    segments = [*pattern.split("/"), "**"]  # the final '**': everything beneath a match
    return _walk(segments, [s == "**" for s in segments], path.split("/"), _segment_matches)


def overlaps(a: str, b: str, *, is_file: Callable[[str], bool] | None = None) -> bool:
    """Could one path be covered by both canonical patterns? (``OVERLAP_RULE``.)

    Without ``is_file`` any literal might be a directory, so ``**/*.sql`` overlaps
    ``README.md`` (a ``README.md/x.sql`` could exist). Pass ``is_file`` (say, a check of the
    working tree) to say which literals are plain files, with nothing beneath them.
    """
    if a == b:
        return True
    if not _nested(literal_prefix(a), literal_prefix(b)):
        return False
    if is_literal(a) and is_literal(b):
        return True  # nested literal paths: the deeper one lies in the other
    if is_file is not None and (is_literal(a) or is_literal(b)):
        path, pattern = (a, b) if is_literal(a) else (b, a)
        if is_file(path):
            return covers(pattern, path)
    return _patterns_meet(a, b)


def _nested(a: str, b: str) -> bool:
    """Is one path a segment-prefix of the other ('' is everything's prefix)?"""
    return not a or not b or a == b or a.startswith(b + "/") or b.startswith(a + "/")


@lru_cache(maxsize=65536)
def _patterns_meet(a: str, b: str) -> bool:
    # Both cover everything beneath their matches: compare the languages of a/** and b/**.
    return _meet([*a.split("/"), "**"], [*b.split("/"), "**"], "**", _segment_globs_meet)
