"""Reservation patterns: what a file reservation names, and when two reservations collide.

A reservation is stored in one canonical form: a repository-relative POSIX path or glob,
anchored at the repository root (``src/a.py``, ``src/**/*.py``, ``**/*.sql``, ``**``).
``normalize`` turns what was typed into that form; ``covers`` and ``overlaps`` take only
canonical forms; ``coord.fast.globmeet`` decides whether two globs meet, in bounded work.
The edit guard imports this before every edit: stdlib ``os`` and ``re`` only.

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
* A trailing ``/`` says "a directory", existing or not: ``src/`` and ``src/**`` are both
  ``src/**``, everything beneath ``src``. Without it a literal is one file unless the
  working tree has a directory there (``overlaps`` asks ``is_dir``).
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
from coord.fast import fsfold, globmeet
from coord.limits import MAX_PATTERN, MAX_PATTERN_WILDCARDS

TYPE_CHECKING = False  # typing costs ~10 ms at import; the edit guard runs before every edit
if TYPE_CHECKING:
    from collections.abc import Callable

    from coord.fast.fsfold import Fold

    Token = tuple[str, str]  # ("c", char) | ("*", "") | ("?", "") | ("[" or "[!", members)

OVERLAP_RULE = f"""\
A reservation covers the files it names. A literal path is one file, existing or to be
created, unless it is a directory of the repository's working tree or is written with a
trailing / (or /**): a directory covers everything beneath it. A glob covers the paths it
matches, not what lies beneath a directory it matches (src/* does not cover src/lib/x.py;
src/lib/ does). Two reservations overlap when some path could be covered by both. Two
packages that create a.py and b.py run side by side; **/a.py does not overlap src/b.py,
src/*.py does. The answer is exact wherever the working tree can tell; it is conservative
only where two globs could match one path the tree lacks (src/*.py against src/[ab].py).
Globs follow gitignore: *, ? and [...] stay within one path segment, ** spans any number of
directories, and a glob without a slash matches at any depth (*.sql means **/*.sql). Literal
paths are plain paths, relative to where you are. Negations (!x) are refused, and so is a
pattern with more than {MAX_PATTERN_WILDCARDS} wildcards. A reservation made before this
rule keeps its wider meaning until it ends.
"""

WHOLE_REPOSITORY = "**"
# The overlap rule new reservations are granted under (stored with each; see ``overlaps_rule1``)
RULE = 2
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


def search_prefix(pattern: str) -> str:
    """``literal_prefix`` by its widest key (NFC, case folded: ``coord.fast.fsfold``): what
    the board's indexed ``prefix`` column holds and a search for overlaps asks, so that it
    finds every spelling a file system could take for one file; the overlap rule then
    compares by the board's own fold."""
    return fsfold.caseless(literal_prefix(pattern))


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
    if not literal and pattern.endswith("/"):
        parts.append("**")  # 'dir/' names a directory, existing or not: everything beneath
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
    """One spelling per reservation: 'a/**/**/b' is 'a/**/b'; 'src/' and 'src/**' are
    'src/**', the directory and everything beneath it."""
    tidy = [s for i, s in enumerate(segments) if not (s == "**" and i and segments[i - 1] == "**")]
    # '**'s, and a last '*' after them, match every path ('*' alone: only the files at the
    # root). A '*' before a '**' does not: '*/**' and '**/*/**' are what lies inside a
    # directory, never a file at the root (read as '**', a file 'a' and '*/**' overlapped)
    if not tidy or (set(tidy) <= {"**", "*"} and "**" in tidy and "*" not in tidy[:-1]):
        return WHOLE_REPOSITORY
    wildcards = tidy.count("**")
    try:
        for kind, members in (token for s in tidy if s != "**" for token in _tokens(s)):
            wildcards += kind != "c"
            if kind.startswith("["):
                _class_matcher(kind, members)
    except re.error as exc:
        raise _refuse(pattern, f"has a malformed [...] ({exc}); fix it or escape the '['") from None
    if wildcards > MAX_PATTERN_WILDCARDS:
        raise _refuse(
            pattern,
            f"has {wildcards} wildcards ('*', '?', '[...]', '**'); the limit is "
            f"{MAX_PATTERN_WILDCARDS}: name the directory, or split it into simpler patterns",
        )
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


_STAR: Token = ("*", "")


@lru_cache(maxsize=16384)
def _segment_matches(glob: str, name: str) -> bool:
    """Does a segment glob match a file name? ``globmeet.fits``'s leftmost placement, each
    star-free block found by ``re`` (one character a token: no backtracking, C speed)."""
    if is_literal(glob):
        return glob == name
    blocks = [_block_regex(tuple(block)) for block in globmeet.blocks(_tokens(glob), _STAR)]
    if len(blocks) == 1:
        return blocks[0].fullmatch(name) is not None
    head, tail = blocks[0], blocks[-1]
    end = len(name) - tail.groups  # each block's length, kept in ``groups`` (see below)
    if head.groups > end or not (head.match(name) and tail.fullmatch(name, end)):
        return False
    at = head.groups
    for block in blocks[1:-1]:
        found = block.search(name, at, end)
        if found is None:
            return False
        at = found.end()
    return True


@lru_cache(maxsize=4096)
def _block_regex(tokens: tuple[Token, ...]) -> re.Pattern[str]:
    """A star-free run of tokens as a regex with one empty group per token, so ``groups``
    is its length in characters."""
    parts = []
    for kind, text in tokens:
        if kind == "c":
            parts.append(re.escape(text))
        elif kind == "?":
            parts.append(".")
        else:
            parts.append(_class_matcher(kind, text).pattern)
    return re.compile("".join(f"{part}()" for part in parts), re.DOTALL)


@lru_cache(maxsize=65536)
def _segment_globs_meet(g: str, h: str) -> bool:
    """Is there a file name both segment globs match?"""
    if is_literal(g) or is_literal(h):
        return _segment_matches(h, g) if is_literal(g) else _segment_matches(g, h)
    return globmeet.meet(_tokens(g), _tokens(h), _STAR, _chars_meet)


def _bounded(check: Callable[[], bool]) -> bool:
    """Run one overlap check within ``globmeet.STEP_BUDGET`` comparisons; past it, "they may
    meet" (only two long globs get there, and refusing is the safe answer). A ``[...]`` that
    case folding left malformed (``[Z-a]`` folds to ``[z-a]``) may meet anything, too."""
    globmeet.Work.reset()
    try:
        return check()
    except (globmeet.OverBudget, re.error):
        return True


def covers(pattern: str, path: str, *, fold: Fold = fsfold.nfc) -> bool:
    """Does canonical ``pattern`` cover canonical file ``path``, as the guard judges an edit?

    A glob covers the paths it matches (``src/**`` everything beneath ``src``). A literal
    covers itself and, at edit time, everything beneath it: a path written beneath it means
    it is a directory now, whatever it was when it was reserved. Names are compared by
    ``fold`` (``coord.fast.fsfold``: NFC, and case where the file system folds it).
    """
    pattern, path = fold(pattern), fold(path)
    if is_literal(pattern):
        return path == pattern or path.startswith(pattern + "/")
    prefix = literal_prefix(pattern)
    if prefix and path != prefix and not path.startswith(prefix + "/"):
        return False
    return _bounded(lambda: _path_matches(pattern, path))


def overlaps(
    a: str, b: str, *, is_dir: Callable[[str], bool] | None = None, fold: Fold = fsfold.nfc
) -> bool:
    """Could one path be covered by both canonical patterns? (``OVERLAP_RULE``.)

    ``is_dir`` says which literal paths are directories of the working tree (they cover
    everything beneath); every other literal is one file, existing or to be created. Without
    it the tree is unknown and any literal might be a directory (the safe reading). Names are
    compared by ``fold``; the tree is asked in the user's own spelling.
    """
    key_a, key_b = fold(a), fold(b)
    settled = _settled(key_a, key_b)
    if settled is not None:
        return settled
    if is_dir is not None:  # a literal the tree says is a file: does the glob match it?
        if is_literal(key_a) and not is_dir(a):
            return _bounded(lambda: _path_matches(key_b, key_a))
        if is_literal(key_b) and not is_dir(b):
            return _bounded(lambda: _path_matches(key_a, key_b))
    reach_a, reach_b = _reach(a, key_a, is_dir), _reach(b, key_b, is_dir)
    return _bounded(lambda: _path_meet(reach_a, reach_b))


def _settled(key_a: str, key_b: str) -> bool | None:
    """What both rules answer before they look at the tree or match globs: the same key
    overlaps; literal prefixes on separate branches do not; two literals do (equal, or one
    lies beneath the other, which then must be a directory). None: not settled yet."""
    if key_a == key_b:
        return True
    if not _nested(literal_prefix(key_a), literal_prefix(key_b)):
        return False
    if is_literal(key_a) and is_literal(key_b):
        return True
    return None


def _reach(pattern: str, key: str, is_dir: Callable[[str], bool] | None) -> str:
    """The pattern's key as the glob of every path it covers: a directory literal gains
    '/**'."""
    if is_literal(key) and (is_dir is None or is_dir(pattern)):
        return key + "/**"
    return key


def _nested(a: str, b: str) -> bool:
    """Is one path a segment-prefix of the other ('' is everything's prefix)?"""
    return not a or not b or a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _path_matches(pattern: str, path: str) -> bool:
    return globmeet.matches(_file_segments(pattern), path.split("/"), "**", _segment_matches)


@lru_cache(maxsize=65536)
def _path_meet(a: str, b: str) -> bool:
    """Could one path match both globs? A trailing '**' may match nothing here: a directory
    literal's reach ('src/**') stands for the directory too, and rule 1's ``beneath`` for the
    matches themselves."""
    return globmeet.meet(a.split("/"), b.split("/"), "**", _segment_globs_meet)


def _file_segments(glob: str) -> list[str]:
    """The glob's segments as they match a file. 'src/**' names the directory src (existing
    or not) and all beneath it, so it covers a file spelled 'src' too. But a trailing '**'
    after a wildcard ('*/**', 'src/*/**') means what lies inside the directories matched,
    which takes at least one more segment: read as zero or more, '*/**' matched the file 'h'
    at the root, and 'h' held by one agent and '*/**' by another were judged to overlap (a
    needless refusal; the overlap property test found it)."""
    segments = glob.split("/")
    if len(segments) > 1 and segments[-1] == "**" and not all(map(is_literal, segments[:-1])):
        return [*segments[:-1], "*", "**"]
    return segments


# --- the rule before issue 12 ------------------------------------------------------------
# Reservations stored before migration 0007 (``rule`` 1) keep this wider meaning until they
# end: every literal may be a directory unless it is a known file, and a glob covers
# everything beneath what it matches. A shell command's write target (``rm -rf src/*``) really
# does reach beneath what it names, so the guard judges those by it too. Once no board can hold
# a rule-1 row (the longest lease, MAX_LEASE_SECONDS, after the release that wrote rule 2),
# the reservation half of this can go; the shell half stays.


def covers_rule1(pattern: str, path: str, *, fold: Fold = fsfold.nfc) -> bool:
    """``covers`` as rule 1 reads it: a glob also covers everything beneath its matches."""
    if is_literal(pattern):
        return covers(pattern, path, fold=fold)
    return covers(pattern, path, fold=fold) or covers(beneath(pattern), path, fold=fold)


def overlaps_rule1(
    a: str, b: str, *, is_file: Callable[[str], bool] | None = None, fold: Fold = fsfold.nfc
) -> bool:
    """``overlaps`` as rule 1 reads it: each pattern covers everything beneath it, except a
    literal ``is_file`` says is a plain file."""
    key_a, key_b = fold(a), fold(b)
    settled = _settled(key_a, key_b)
    if settled is not None:
        return settled
    if is_file is not None and (is_literal(a) or is_literal(b)):
        path, pattern = (a, b) if is_literal(a) else (b, a)
        if is_file(path):
            return covers_rule1(pattern, path, fold=fold)
    return _bounded(lambda: _path_meet(beneath(key_a), beneath(key_b)))


def beneath(pattern: str) -> str:
    """The glob of what ``pattern`` names and everything beneath it."""
    return pattern if pattern == WHOLE_REPOSITORY or pattern.endswith("/**") else pattern + "/**"
