"""The shell guard judged by running (issue 22): every command of tests/guard_corpus/shell.txt
goes through each client's real hook as agent B while agent A holds files, and is then run in a
scratch copy of the repository (tests/guard_oracle.py). An allowed command that changed a held
file is an escape; a refused command that changed none is a false refusal, accepted only when
the README's list names it.

The corpus runs once per session (about 30 s on two cores: ~730 commands x 4 clients, each
command in its own copy); the tests below read that one run.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import guard_oracle as oracle

CORPUS = Path(__file__).parent / "guard_corpus" / "shell.txt"
README = Path(__file__).parent.parent / "README.md"
LIST_TITLE = "**Harmless commands the shell hook refuses.**"


def accepted_refusals() -> list[str]:
    """The README's list (section "Files: reservations and the guard"): the harmless commands
    coord refuses, each a bullet naming the command in backticks (``- none`` for none)."""
    text = README.read_text(encoding="utf-8")
    assert LIST_TITLE in text, f"the README has lost its {LIST_TITLE} paragraph"
    after = text.split(LIST_TITLE, 1)[1]
    bullets: list[str] = []
    started = False
    for line in after.splitlines():
        if line.startswith("- "):
            started = True
            bullets.append(line)
        elif line.startswith("  ") and started:
            continue  # a bullet's reason, wrapped
        elif started:
            break
    assert bullets, f"no list under {LIST_TITLE} in the README"
    if bullets == ["- none"]:
        return []
    commands = []
    for bullet in bullets:
        found = re.match(r"- (`+) ?(.+?) ?\1(?::|$)", bullet)
        assert found, f"README: a bullet under {LIST_TITLE} names no `command`: {bullet!r}"
        commands.append(found.group(2))
    return commands


@pytest.fixture(scope="module")
def entries() -> list[oracle.Entry]:
    return oracle.load_corpus(CORPUS)


@pytest.fixture(scope="module")
def corpus(entries: list[oracle.Entry]) -> Iterator[oracle.CorpusRun]:
    with oracle.scratch("guard-corpus-") as root:
        run = oracle.run_corpus(entries, root)
    print("\n" + oracle.summary(run))
    yield run


def _place(outcome: oracle.Outcome) -> str:
    e = outcome.entry
    where = f" (in {e.cwd})" if e.cwd != "." else ""
    return f"line {e.line} [{e.category}] {e.command!r}{where}"


def test_the_corpus_covers_what_the_issue_lists(entries: list[oracle.Entry]) -> None:
    assert len(entries) >= 300
    commands = [(e.command, e.cwd) for e in entries]
    twice = [c for c, n in Counter(commands).items() if n > 1]
    assert not twice, f"entries given twice: {twice}"
    by_expectation = Counter(e.expect for e in entries)
    assert all(by_expectation[x] >= 40 for x in oracle.EXPECTATIONS), by_expectation
    categories = {e.category for e in entries}
    for category in (
        "redirections",
        "shell keywords",
        "globs",
        "brace expansion",
        "clustered flags",
        "wrappers",
        "shells and stdin scripts",
        "find and xargs",
        "variables and substitutions",
        "eval and computed commands",
        "interpreters",
        "editors",
        "writers coord may not know",
        "git rewrites of the working tree",
        "everyday reads",
        "everyday builds and tests",
    ):
        assert category in categories, category
    for category in categories:  # each one tries both ways
        kinds = {e.expect for e in entries if e.category == category}
        assert "writes-held" in kinds or category.startswith("everyday"), category
    # the spellings the issue names, each in the corpus
    spelled = "\n".join(e.command for e in entries)
    for piece in (
        "sed -i 's/return/yield/' src/*.py",
        "rm src/a*",
        "truncate -s0 src/*.py",
        "tee src/?.py",
        "cd src && sed -i",
        "if true; then cp",
        "{ rm src/a.py; }",
        "! rm",
        "pushd src",
        "coproc",
        "git stash -u",
        "git reset --hard",
        "git restore .",
        "git checkout .",
        "git checkout -f",
        "git clean -fd",
        "git rm -f",
        "git mv -f",
        "git read-tree -u",
        "git checkout-index -f -a",
        "env -C",
        "bash -o errexit -c",
        "env -S",
        "bash <<<",
        "| bash",
        "bash -s <<EOF",
        "src/a.p{y,}",
        "cp -rT",
        "perl -0pi",
        "perl -lpi",
        "setsid",
        "flock",
        "ionice",
        "taskset",
        "script -qc",
        "su -c",
        "runuser",
        "rsync",
        "tar xf",
        "unzip -o",
        "curl -s -o",
        "wget -q -O",
        "sort -o",
        "gzip",
        "git apply",
        "awk -i inplace",
        "ex -sc",
        "vim -es",
        "chmod",
        "f=src/a.py; echo x > $f",
        'echo x > "$(echo src/a.py)"',
        "eval",
        "python -c \"open('src/a.py','w')",
        "xargs rm",
        "-delete",
    ):
        assert piece in spelled, piece


def test_every_program_the_corpus_runs_is_installed(corpus: oracle.CorpusRun) -> None:
    """An entry whose program is missing is not run: under CI=true that fails (.ci/run
    installs them), elsewhere the entries are skipped, named."""
    missing = [f"line {e.line} {e.command!r}: needs {', '.join(m)}" for e, m in corpus.skipped]
    if missing and os.environ.get("CI") == "true":
        pytest.fail("programs the corpus runs are missing:\n" + "\n".join(missing))
    if missing:
        pytest.skip("not run, programs missing:\n" + "\n".join(missing))


def test_every_entry_does_what_its_label_says(corpus: oracle.CorpusRun) -> None:
    """The oracle checks the corpus too: a writes-held entry must change a held file when
    run, a harmless or free-write one must not (else the corpus is wrong, not the guard)."""
    wrong = corpus.mislabelled()
    assert not wrong, "corpus entries their run contradicts:\n" + "\n".join(wrong)
    assert sum(1 for o in corpus.outcomes if o.execution.changed) >= 150


def test_the_driver_answers_as_the_real_hook_process(corpus: oracle.CorpusRun) -> None:
    """The corpus is judged through one driver process per client calling the entry
    `coord hook` calls; a sample is also sent to real `coord hook CLIENT EVENT` processes."""
    assert not corpus.disagreements, "\n".join(corpus.disagreements)
    unclear = [f"{c}: {_place(o)}: {o.verdicts[c].reason}" for o, c in corpus.unclear()]
    assert not unclear, "answers that neither refuse nor allow:\n" + "\n".join(unclear)


def test_no_allowed_command_changes_a_held_file(corpus: oracle.CorpusRun) -> None:
    by_command: dict[int, list[str]] = {}
    outcomes: dict[int, oracle.Outcome] = {}
    for outcome, client in corpus.escapes():
        by_command.setdefault(outcome.entry.line, []).append(client)
        outcomes[outcome.entry.line] = outcome
    lines = [
        f"{_place(outcomes[n])}: allowed by {', '.join(clients)}; "
        f"it changed {', '.join(outcomes[n].execution.changed)}"
        for n, clients in sorted(by_command.items())
    ]
    assert not lines, (
        f"{len(lines)} allowed commands changed a held file:\n"
        + "\n".join(lines)
        + "\n"
        + oracle.summary(corpus)
    )


def test_harmless_commands_are_refused_only_as_the_readme_lists(
    corpus: oracle.CorpusRun, entries: list[oracle.Entry]
) -> None:
    accepted = accepted_refusals()
    harmless = {e.command for e in entries if e.expect != "writes-held"}
    unknown = [c for c in accepted if c not in harmless]
    assert not unknown, f"the README lists commands that are no harmless corpus entry: {unknown}"
    refused: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    for outcome, client in corpus.false_refusals():
        refused.setdefault(outcome.entry.command, []).append(client)
        reasons[outcome.entry.command] = f"{_place(outcome)}: {outcome.verdicts[client].reason}"
    unlisted = [f"{reasons[c]} (by {', '.join(refused[c])})" for c in refused if c not in accepted]
    assert not unlisted, "harmless commands refused that the README does not list:\n" + (
        "\n".join(unlisted)
    )
    # a listed command is refused by every client, or the list says more than is true
    stale = [c for c in accepted if len(refused.get(c, [])) != len(oracle.CLIENTS)]
    assert not stale, f"the README lists as refused commands some client allows: {stale}"
