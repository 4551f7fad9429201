"""Issue 12's plan figure: a generated 200-package plan, imported, and the set of packages
`coord next --count` hands out, against an oracle's greedy set on the final tree.

The plan: about 60% of its files are new (bare root names and new files in existing
directories), some existing files, directories written with a trailing '/', globs, and a
few real conflicts (the same file twice, a directory over another package's file, two
globs over one existing file). The oracle is the property test's
(``tests/test_overlap_property.py``): it knows the final tree. The figure is the ratio of
the two sets' sizes (target 1.0), and the count of handed-out pairs the oracle says
conflict (must be 0).

``coord next --count`` stops at ``MAX_BATCH``; the figure asks in rounds of that size, each
by a new agent (a package overlapping an earlier round's claim is then held by someone
else), which hands out the same greedy set one call of 200 would.
"""

from __future__ import annotations

import sys
from itertools import combinations
from pathlib import Path

from common import log, new_board_dir, temp_dir, verdict
from coord.cli.spec_cmd import _wire
from coord.core.board import Board
from coord.errors import NothingReady
from coord.limits import MAX_BATCH
from coord.spec.parse import parse_file
from coord.spec.protocol import kept_for, working_tree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_overlap_property import Named, ancestors, oracle_conflict

PACKAGES = 200


def plan_files(n: int, root: str = "") -> list[str]:
    """The files package ``n`` names, as a document writes them (``root``: '/' to anchor the
    bare names, as the issue's reading of a bare name does)."""
    if n % 20 == 7:
        return [f"{root}new{n - 1}.py"]  # the same new root file as the package before it
    if n % 25 == 11:
        return ["lib/"]  # a directory over every lib/ file another package names
    if n % 30 == 13:
        return ["docs/*.md"]  # two globs over the existing docs/guide.md
    if n % 30 == 14:
        return ["docs/g*.md"]
    kind = n % 10
    if kind < 4:
        return [f"{root}new{n}.py", f"{root}test_new{n}.py"]  # bare names: new root files
    if kind < 6:
        return [f"src/new{n}.py"]  # a new file in an existing directory
    if kind == 6:
        return [f"pkg{n}/"]  # a new directory, written as one
    if kind == 7:
        return [f"lib/m{n}.py"]  # an existing file
    if kind == 8:
        return [f"src/gen{n}/*.py"]  # a glob in a directory that does not exist yet
    return [f"tests/test_{n}_*.py"]


def existing_files() -> list[str]:
    return [f"lib/m{n}.py" for n in range(PACKAGES) if n % 10 == 7] + [
        "src/__init__.py",
        "docs/guide.md",
        "tests/conftest.py",
    ]


def generate(root: str) -> str:
    lines = ["# Generated plan", "", "## Work packages", ""]
    for n in range(PACKAGES):
        files = ", ".join(f"`{f}`" for f in plan_files(n, root))
        lines += [
            f"- [ ] **P{n} — package {n}.** Dependencies: none.",
            f"  - Primary files: {files}.",
            f"  - Implement package {n}.",
            "",
        ]
    return "\n".join(lines)


def oracle_greedy(order: list[str], files: dict[str, list[str]], tree: list[str]) -> list[str]:
    dirs = {d for f in tree for d in ancestors(f)}
    taken: list[str] = []
    for pid in order:
        if not any(conflict(files[pid], files[t], tree, dirs) for t in taken):
            taken.append(pid)
    return taken


def conflict(mine: list[str], theirs: list[str], tree: list[str], dirs: set[str]) -> bool:
    return any(oracle_conflict(Named(a, dirs), Named(b, dirs), tree) for a in mine for b in theirs)


def bench_plan_overlap() -> None:
    print(f"\n== plan figure: a generated {PACKAGES}-package plan, imported")
    print(f"  `coord next --count` in rounds of {MAX_BATCH} (its cap)")
    for root, how in (("", "bare names"), ("/", "bare names written /name")):
        _one_plan(root, how)


def _one_plan(anchor: str, how: str) -> None:
    root = temp_dir("plan-overlap")
    tree = existing_files()
    for path in tree:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    doc = root / "docs" / "plan.md"
    doc.write_text(generate(anchor), encoding="utf-8")
    parsed = parse_file(doc)
    files = {p.id: plan_files(int(p.id[1:])) for p in parsed.packages}  # the oracle's
    board = Board.open(new_board_dir("plan-overlap"), repo_root=root)
    handed: list[str] = []
    try:
        kept = kept_for(parsed, working_tree(root))  # as `coord spec import` sends it
        wired = [_wire(p, kept.get(p.id)) for p in parsed.packages]
        board.import_packages("docs/plan.md", wired, created_by="b")
        order = [p.id for p in parsed.packages]
        for round_ in range(PACKAGES):
            try:
                claims = board.claim_batch(MAX_BATCH, agent=f"round-{round_}")
            except NothingReady:
                break
            if not claims:
                break
            handed += [c.item.key or "" for c in claims]
    finally:
        board.close()
    log(f"plan: {len(handed)} packages handed out; the oracle's greedy sets next")
    dirs = {d for f in tree for d in ancestors(f)}
    # the oracle reads a bare name as a root file, as the parser now does: both lines should
    # hand out the same set
    greedy = oracle_greedy(order, files, tree)
    unsafe = sum(conflict(files[a], files[b], tree, dirs) for a, b in combinations(handed, 2))
    ratio = len(handed) / len(greedy)
    print(
        f"  {how:26s} coord {len(handed):3d}, oracle's greedy set {len(greedy):3d}: ratio "
        f"{ratio:4.2f} (target 1.0: {verdict(ratio >= 1.0)}); conflicting pairs handed out "
        f"{unsafe} ({verdict(not unsafe)})"
    )


if __name__ == "__main__":
    bench_plan_overlap()
