"""Reservation patterns: canonical forms, covers, overlaps, and gitignore semantics checked
against pathspec as an independent oracle."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from itertools import product
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec.patterns.gitignore.basic import GitIgnoreBasicPattern
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from coord.errors import InvalidInput
from coord.fast.patterns import (
    covers,
    covers_rule1,
    escape,
    explain_rule,
    is_literal,
    literal_prefix,
    normalize,
    overlaps,
    overlaps_rule1,
)

# ---------------------------------------------------------------------------------------------
# normalize


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with src/sub, docs, a symlink alias inside and one leading outside."""
    root = tmp_path / "repo"
    (root / "src" / "sub").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "src" / "a.py").write_text("")
    (tmp_path / "outside").mkdir()
    (root / "alias").symlink_to(root / "src")
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "src" / "up").symlink_to(tmp_path)
    return root


GOOD = [
    # (pattern, cwd relative to the repo or None, canonical)
    ("src/a.py", None, "src/a.py"),
    ("./src//a.py/", None, "src/a.py/**"),  # written as a directory, so it is one
    ("src/./sub/../a.py", None, "src/a.py"),
    ("src/", None, "src/**"),  # the directory and everything beneath it
    ("src/**", None, "src/**"),
    ("src/**/", None, "src/**"),
    ("Makefile", None, "Makefile"),  # a literal is a path, not gitignore's any-depth name
    ("*.sql", None, "**/*.sql"),  # a slash-less glob matches at any depth
    ("*.sql/", None, "**/*.sql/**"),
    ("./*.sql", None, "*.sql"),  # a slash makes it anchored
    ("/src/*.py", None, "src/*.py"),  # gitignore's leading-slash anchor
    ("/*.sql", None, "*.sql"),
    ("src/*.py", None, "src/*.py"),
    ("a/**/**/b", None, "a/**/b"),
    ("**/x/**", None, "**/x/**"),
    ("**", None, "**"),
    ("*", None, "**"),
    ("**/*", None, "**"),
    ("/*", None, "*"),  # the files at the root: a glob covers what it matches
    (".", None, "**"),
    ("./", None, "**"),
    ("*/*", None, "*/*"),
    ("src/[ab].py", None, "src/[ab].py"),
    ("a\\*b", None, "**/a\\*b"),  # backslash escapes a glob character, as in gitignore
    ("src/\\[id\\].tsx", None, "src/\\[id\\].tsx"),
    ("./!bang", None, "!bang"),
    (".gitignore", None, ".gitignore"),
    ("alias/a.py", None, "src/a.py"),  # a symlink inside the repository is resolved
    ("alias/*.py", None, "src/*.py"),
    ("alias", None, "src"),
    ("a.py", "src", "src/a.py"),  # relative to cwd
    ("*.py", "src", "src/**/*.py"),  # any depth below cwd
    ("sub/*.py", "src", "src/sub/*.py"),
    ("../docs/x.md", "src", "docs/x.md"),
    (".", "src", "src"),
    ("/docs/x.md", "src", "docs/x.md"),  # a leading slash anchors at the repository root
    ("src/a.py", "..", "src/a.py"),  # cwd outside the repository: relative to the root
]


@pytest.mark.parametrize(("pattern", "cwd", "expected"), GOOD)
def test_normalize_good(repo: Path, pattern: str, cwd: str | None, expected: str) -> None:
    assert normalize(pattern, repo, None if cwd is None else repo / cwd) == expected


def test_normalize_absolute_paths(repo: Path, tmp_path: Path) -> None:
    assert normalize(str(repo / "src" / "a.py"), repo) == "src/a.py"
    assert normalize(str(repo) + "/src/*.py", repo) == "src/*.py"
    assert normalize(str(repo) + "//src/../docs/", repo) == "docs/**"
    assert normalize(str(repo), repo) == "**"
    assert normalize(str(repo) + "/", repo) == "**"
    # the repository reached through a symlink (macOS /tmp vs /private/tmp) is the same one
    (tmp_path / "link").symlink_to(repo)
    assert normalize(str(tmp_path / "link" / "src" / "a.py"), repo) == "src/a.py"
    assert normalize(str(repo / "docs" / "x.md"), tmp_path / "link") == "docs/x.md"
    assert normalize("../src/a.py", tmp_path / "link", cwd=repo / "docs") == "src/a.py"
    assert normalize("x.md", tmp_path / "link", cwd=repo / "docs") == "docs/x.md"


BAD = [
    # (pattern, cwd, a word the message must contain)
    ("", None, "empty"),
    ("   ", None, "empty"),
    (" src", None, "whitespace"),
    ("src/a.py\n", None, "whitespace"),
    ("src/\0x", None, "NUL"),
    ("!src/a.py", None, "negation"),
    ("../x", None, "outside"),
    ("src/../../x", None, "outside"),
    ("../../x", "src", "outside"),
    ("..", None, "outside"),
    ("out/x.py", None, "symlink"),
    ("out", None, "symlink"),
    ("out/*.py", None, "symlink"),
    ("src/up/repo/../outside", None, "symlink"),
    (".git", None, ".git"),
    (".git/config", None, ".git"),
    ("sub/.GIT/hooks/x", None, ".git"),
    ("src/*/../a.py", None, "after a glob"),
    ("src\\a.py", None, "backslash"),
    ("src/a\\", None, "backslash"),
    ("src/[b-a].py", None, "malformed"),
    ("/", None, "filesystem root"),
    ("x" * 5000, None, "longer"),
]


@pytest.mark.parametrize(("pattern", "cwd", "word"), BAD)
def test_normalize_refuses(repo: Path, pattern: str, cwd: str | None, word: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        normalize(pattern, repo, None if cwd is None else repo / cwd)
    assert word.casefold() in caught.value.message.casefold()
    assert caught.value.code == "invalid_input"
    if pattern.strip() and len(pattern) < 100:
        assert repr(pattern) in caught.value.message  # the message names the pattern


def test_normalize_refuses_absolute_paths_outside(repo: Path, tmp_path: Path) -> None:
    for outside in (tmp_path / "outside" / "x.py", tmp_path, repo / ".." / "outside"):
        with pytest.raises(InvalidInput, match="outside the repository"):
            normalize(str(outside), repo)
    if os.path.exists("/etc/passwd"):
        with pytest.raises(InvalidInput, match="outside the repository"):
            normalize("/etc/passwd", repo)


def test_normalize_literal_mode_reads_file_paths(repo: Path) -> None:
    assert normalize("app/[id].tsx", repo, literal=True) == "app/[id].tsx"
    assert normalize("*.py", repo, cwd=repo / "src", literal=True) == "src/*.py"
    assert normalize("a\\b", repo, literal=True) == "a\\b"
    assert normalize(str(repo / "alias" / "a.py"), repo, literal=True) == "src/a.py"
    assert normalize("!x", repo, literal=True) == "!x"
    for bad in (".", "../x", "out/x", ".git/HEAD", ""):
        with pytest.raises(InvalidInput):
            normalize(bad, repo, literal=True)
    # a path with glob characters is covered by its escaped pattern, not its raw text
    path = normalize("app/[id].tsx", repo, literal=True)
    assert covers(escape(path), path)
    assert not covers(path, path)  # '[id]' is a class of one character, as in gitignore


# ---------------------------------------------------------------------------------------------
# covers, overlaps, helpers

COVERS = [
    ("src", "src/a.py", True),
    ("src", "src", True),
    ("src", "srcx/a.py", False),
    ("src/a.py", "src/a.pyc", False),
    ("src/a.py", "src/a.py", True),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/a/b.py", False),
    ("src/*", "src/a/b.py", False),  # a glob covers what it matches, not beneath
    ("src/*", "src", False),
    ("**/*.sql", "db/x.sql", True),
    ("**/*.sql", "x.sql", True),
    ("**/*.sql", "x.sql.bak", False),
    ("*.sql", "db/x.sql", False),  # canonical forms are anchored: root only
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b/c", False),
    ("a/**/b/**", "a/x/y/b/c", True),
    ("a/**/b", "a/x/c", False),
    ("**", "any/thing", True),
    ("src/?.py", "src/ab.py", False),
    ("src/?.py", "src/a.py", True),
    ("src/[ab].py", "src/b.py", True),
    ("src/[!ab].py", "src/b.py", False),
    ("src/[!ab].py", "src/c.py", True),
    ("src/[a-c].py", "src/b.py", True),
    ("src/a*b", "src/a/b", False),  # '*' never matches '/'
    ("src/a?b", "src/a/b", False),
    ("src/a[!x]b", "src/a/b", False),  # nor does a negated class (pathspec disagrees, git agrees)
    ("app/\\[id\\].tsx", "app/[id].tsx", True),
    ("x/[]a]", "x/]", True),  # a ']' first in a class is a member
    ("x/[!]a]", "x/]", False),
    ("x/[!]a]", "x/b", True),
    ("x/[", "x/[", True),  # an unclosed '[' is an ordinary character
    ("x/[!]", "x/[!]", True),
    ("docs/*.md", "docs/api/x.md", False),
    ("**/test_*.py", "tests/unit/test_x.py", True),
    ("*/*", "a", False),
    ("*/*", "a/b/c", False),
    ("*/*/**", "a/b/c", True),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), COVERS)
def test_covers(pattern: str, path: str, expected: bool) -> None:
    assert covers(pattern, path) is expected


OVERLAPS = [
    ("src", "src/a.py", True),
    ("src/a.py", "src/a.py", True),
    ("src/a.py", "src/a.pyc", False),
    ("src/a", "src/ab", False),
    ("src", "docs", False),
    ("src/*.py", "src/a/b.py", False),
    ("src/*", "src/a/b.py", False),  # src/a/b.py/x: a glob covers no path beneath a match
    ("src/*/**", "src/a/b.py", True),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/a.md", False),
    ("src/*.py", "src/[ab].py", True),
    ("src/*.py", "tests/*.py", False),
    ("**/*.sql", "db/x.sql", True),
    ("**/*.sql", "db", True),
    ("**/*.sql", "db/x.py", True),  # without is_file, db/x.py might be a directory
    ("src/**", "src/a.py", True),
    ("src", "README.md", False),
    ("docs/*.md", "docs/api/*.md", False),
    ("docs/*.md", "docs/*/*.md", False),  # a match's contents are not covered
    ("docs/*", "docs/api/*.md", False),
    ("docs/**", "docs/api/*.md", True),
    ("docs/**/*.md", "docs/api/*.md", True),
    ("**", "anything", True),
    ("**/x", "a/**/b", False),
    ("**/x/**", "a/**/b", True),  # a/x/b
    ("a/*/c", "*/b/*", True),  # a/b/c
    ("a/*/c", "*/b/d", False),
    ("*.py", "*.md", False),
    ("**/*.py", "**/*.md", False),
    ("**/a.py", "src/b.py", True),  # without the tree, src/b.py might be a directory
    ("**/c.py", "**/a.py", False),
    ("src/*.py", "src/b.py", True),
    ("src/a*", "src/*b", True),
    ("src/a*", "src/b*", False),
    ("src/*a", "src/*b", False),
    ("src/?", "src/ab", False),
    ("src/??", "src/ab", True),
    ("src/[ab]", "src/[cd]", False),
    ("src/[a-c]", "src/[b-d]", True),
    ("src/[a-c]", "src/[!abc]", False),
    ("src/[a-c]", "src/[!ab]", True),
    ("src/[!a]", "src/[!b]", True),
    ("src/[ab]x", "src/?y", False),
    ("src/a\\*", "src/a*", True),
    ("src/a\\*", "src/ab", False),
    ("src/a\\*", "src/a\\?", False),
]


@pytest.mark.parametrize(("a", "b", "expected"), OVERLAPS)
def test_overlaps(a: str, b: str, expected: bool) -> None:
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected  # symmetric


def test_overlaps_with_the_tree_is_exact_for_literals() -> None:
    dirs = {"db", "src"}.__contains__
    assert not overlaps("**/*.sql", "README.md", is_dir=dirs)
    assert not overlaps("db/x.py", "**/*.sql", is_dir=dirs)
    assert overlaps("**/*.sql", "db/x.sql", is_dir=dirs)
    assert overlaps("**/*.sql", "db", is_dir=dirs)  # an existing directory
    assert not overlaps("**/*.sql", "new", is_dir=dirs)  # a file to be created
    assert overlaps("**/*.py", "db/x.py", is_dir=dirs)
    assert overlaps("src", "src/new.py", is_dir=dirs)
    assert overlaps("a.py", "a.py/x", is_dir=dirs)  # a file there and a path beneath it
    assert not overlaps("a.py", "b.py", is_dir=dirs)  # two new root files, side by side
    assert not overlaps("a.py", "src/*.py", is_dir=dirs)
    assert not overlaps("**/a.py", "src/b.py", is_dir=dirs)
    # what lies inside the directories a glob matches is no file at the root (the property
    # test's counterexample: '*/**' once met the file 'h')
    assert not overlaps("h", "*/**", is_dir=dirs)
    assert not overlaps(".h", ".*/**", is_dir=dirs)
    assert overlaps("h/x", "*/**", is_dir=dirs)
    assert overlaps("h", "h/**", is_dir=dirs)  # the directory h, existing or not: a file h too


def test_rule1_keeps_the_wider_meaning_of_old_holds() -> None:
    files = {"README.md", "db/x.py"}.__contains__
    assert not overlaps_rule1("**/*.sql", "README.md", is_file=files)
    assert not overlaps_rule1("db/x.py", "**/*.sql", is_file=files)
    assert overlaps_rule1("**/*.sql", "db/x.sql", is_file=files)
    assert overlaps_rule1("**/*.sql", "db", is_file=files)  # db is not a known file
    assert overlaps_rule1("**/a.py", "src/b.py", is_file=files)  # src/b.py/a.py
    assert overlaps_rule1("**/*.py", "**/*.md")  # x.py/y.md
    assert covers_rule1("src/*", "src/a/b.py")
    assert not covers("src/*", "src/a/b.py")


def test_helpers() -> None:
    assert is_literal("src/a.py")
    assert not any(map(is_literal, ["*.py", "a?", "[ab]", "a\\*"]))
    assert literal_prefix("src/auth/**/*.py") == "src/auth"
    assert literal_prefix("src/a.py") == "src/a.py"
    assert literal_prefix("**/*.sql") == ""
    assert literal_prefix("src/a\\*/b") == "src"
    assert escape("app/[id]/*.tsx") == "app/\\[id]/\\*.tsx"
    assert covers(escape("app/[id]/*.tsx"), "app/[id]/*.tsx")
    rule = explain_rule()
    for phrase in ("exact", "conservative", "*.sql", "Negations"):
        assert phrase in rule


def test_negated_class_and_slash_agree_with_git(tmp_path: Path) -> None:
    """pathspec lets 'a[!x]b' match 'a/b'; git does not, and neither do we."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    subprocess.run([git, "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("a[!x]b\nc[.-0]d\n")
    result = subprocess.run(
        [git, "-C", str(tmp_path), "check-ignore", "--no-index", "a/b", "c/d"],
        capture_output=True,
        text=True,
    )
    assert result.stdout == ""  # git ignores neither
    assert GitIgnoreSpecPattern("a[!x]b").match_file("a/b") is not None  # pathspec does
    assert not covers("**/a[!x]b", "a/b")
    assert not covers("**/c[.-0]d", "c/d")


# ---------------------------------------------------------------------------------------------
# properties, with pathspec as the oracle of gitignore semantics

NAMES = ["a", "b", "ab", "x.py", "y.md", ".h"]
GLOB_SEGMENTS = ["*", "?", "**", "[ab]", "[!a]", "*.py", "a*", "?b", "[ab]*", "*b", ".*", "a**"]
UNIVERSE = ["/".join(p) for n in range(1, 4) for p in product(NAMES, repeat=n)]

paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=4).map("/".join)
trees = st.lists(paths, min_size=1, max_size=10)


@st.composite
def raw_patterns(draw: st.DrawFn) -> str:
    segments = draw(st.lists(st.sampled_from(NAMES + GLOB_SEGMENTS), min_size=1, max_size=3))
    lead = draw(st.sampled_from(["", "", "/"]))
    trail = draw(st.sampled_from(["", "", "/"]))
    return lead + "/".join(segments) + trail


@pytest.fixture(scope="module")
def empty_repo() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as root:
        yield root


def oracle_form(raw: str) -> str:
    """The gitignore pattern that means what coord means by ``raw`` at the repository root.

    The one deliberate difference: a slash-less literal is a root path, not any-depth.
    """
    if is_literal(raw) and not raw.startswith("/") and "/" not in raw.rstrip("/"):
        return "/" + raw
    return raw


def pathspec_covers(gitignore_pattern: str, path: str) -> bool:
    """Does pathspec match the path, or one of its ancestor directories?"""
    parts = path.split("/")
    ancestors = ["/".join(parts[:k]) for k in range(1, len(parts))]
    candidates = [path, *ancestors, *(a + "/" for a in ancestors)]
    for cls in (GitIgnoreBasicPattern, GitIgnoreSpecPattern):
        pattern = cls(gitignore_pattern)
        if pattern.include and any(pattern.match_file(c) is not None for c in candidates):
            return True
    return False


def pathspec_matches(gitignore_pattern: str, path: str) -> bool:
    """Does pathspec match the path itself (not through a directory above it)?"""
    for cls in (GitIgnoreBasicPattern, GitIgnoreSpecPattern):
        pattern = cls(gitignore_pattern)
        found = pattern.regex.match(path) if pattern.include and pattern.regex else None
        if found is None:
            continue
        # a regex that may end at a '/' or at the end matched a directory above the path
        # unless it reached the end; one with no end ('.', '^a/') matches all it starts
        if found.end() == len(path) or not pattern.regex.pattern.endswith("$)"):
            return True
    return False


def oracle_covers(raw: str, path: str) -> bool:
    """What coord's ``covers`` means, in pathspec's terms: a literal (the edit guard's
    reading) or a pattern written as a directory covers what lies beneath it; a glob covers
    exactly the paths it matches."""
    oracle = oracle_form(raw)
    if is_literal(raw) or raw.endswith(("/", "/**")) or raw in ("*", "**"):  # "*": all
        return pathspec_covers(oracle, path)
    return pathspec_matches(oracle, path)


PROPERTY = settings(
    max_examples=5000 if os.environ.get("COORD_SOAK") == "1" else 300, deadline=None
)


@PROPERTY
@given(raw=raw_patterns(), tree=trees)
def test_covers_never_misses_what_gitignore_matches(
    empty_repo: str, raw: str, tree: list[str]
) -> None:
    canonical = normalize(raw, empty_repo)
    for path in tree:
        if oracle_covers(raw, path):
            assert covers(canonical, path), (raw, canonical, path)


@PROPERTY
@given(raw=raw_patterns(), tree=trees)
def test_covers_is_exact_except_documented_widening(
    empty_repo: str, raw: str, tree: list[str]
) -> None:
    # the only widenings: a trailing '/' or '/**' also covers a file of that name
    if raw.endswith("/") or raw.endswith("**"):
        return
    canonical = normalize(raw, empty_repo)
    for path in tree:
        assert covers(canonical, path) == oracle_covers(raw, path), (raw, canonical, path)


@PROPERTY
@given(a=raw_patterns(), b=raw_patterns(), tree=trees)
def test_overlaps_never_misses_a_shared_path(
    empty_repo: str, a: str, b: str, tree: list[str]
) -> None:
    ca, cb = normalize(a, empty_repo), normalize(b, empty_repo)
    if any(oracle_covers(a, p) and oracle_covers(b, p) for p in tree):
        assert overlaps(ca, cb), (a, b, ca, cb)
    assert overlaps(ca, cb) == overlaps(cb, ca)


@PROPERTY
@given(a=raw_patterns(), b=raw_patterns())
def test_covers_and_overlaps_agree(empty_repo: str, a: str, b: str) -> None:
    ca, cb = normalize(a, empty_repo), normalize(b, empty_repo)
    shared = [p for p in UNIVERSE if covers(ca, p) and covers(cb, p)]
    if shared:
        assert overlaps(ca, cb), (ca, cb, shared[0])


@PROPERTY
@given(raw=st.lists(st.sampled_from([*NAMES, ".", ".."]), min_size=1, max_size=4), tree=trees)
def test_literal_covers_is_exactly_ancestor_or_self(
    empty_repo: str, raw: list[str], tree: list[str]
) -> None:
    try:
        canonical = normalize("/".join(raw), empty_repo)
    except InvalidInput:
        return  # '..' above the root
    if canonical == "**":
        return
    assert is_literal(canonical)
    for path in [*tree, canonical, canonical + "x", canonical + "/x"]:
        expected = path == canonical or path.startswith(canonical + "/")
        assert covers(canonical, path) is expected
        assert overlaps(canonical, path) is (expected or canonical.startswith(path + "/"))


@PROPERTY
@given(raw=raw_patterns())
def test_normalize_is_idempotent_for_anchored_forms(empty_repo: str, raw: str) -> None:
    canonical = normalize(raw, empty_repo)
    # a canonical slash-less glob is root-anchored; typed again it would mean any depth
    if "/" in canonical or is_literal(canonical) or canonical == "**":
        assert normalize(canonical, empty_repo) == canonical
    else:
        assert normalize("./" + canonical, empty_repo) == canonical


def test_long_patterns_neither_recurse_deeply_nor_backtrack() -> None:
    stars = "src/" + "*a" * 2000
    assert overlaps(stars, "src/" + "a*" * 2000)
    assert not covers(stars, "src/" + "a" * 255 + "b")
    many = "/".join(["**", "a*"] * 600)
    assert overlaps(many, "/".join(["**", "*b"] * 600))
    assert not covers("/".join(["*"] * 1500) + "/q", "/".join(["a"] * 1500) + "/r")


def test_one_pattern_length_limit_for_the_model_and_the_normaliser(repo: Path) -> None:
    """The model refused a pattern over 1,024 characters while the normaliser took up to
    4,096: `coord reserve` and an item's files disagreed on the same text."""
    from coord import model
    from coord.limits import MAX_PATTERN

    at_limit = "src/" + "a" * (MAX_PATTERN - 4)
    over = at_limit + "b"
    assert normalize(at_limit, repo) == at_limit
    assert model.check_files([at_limit]) == (at_limit,)
    with pytest.raises(InvalidInput, match=str(MAX_PATTERN)):
        normalize(over, repo)
    with pytest.raises(InvalidInput, match=str(MAX_PATTERN)):
        model.check_files([over])
