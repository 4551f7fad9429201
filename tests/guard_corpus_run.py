"""A corpus for the guard's oracle (see tests/guard_oracle.py): the file format, a run of
every entry through every client's hook and then in its own sandbox, and the reports a test
asserts on.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guard_judge import CLIENTS, Judges, Verdict
from guard_scene import Execution, execute, make_template, remove, sandbox

CORPORA = Path(__file__).parent / "guard_corpus"  # every corpus file: *.txt
GUARD_PAGE = Path(__file__).parent.parent / "docs" / "files-and-the-guard.md"
LIST_TITLE = "**Harmless commands the shell hook refuses.**"

EXPECTATIONS = ("writes-held", "harmless", "free-write")


@dataclass(frozen=True)
class Entry:
    command: str
    expect: str  # one of EXPECTATIONS
    category: str
    cwd: str = "."
    needs: tuple[str, ...] = ()  # programs it runs (absent: skipped, failed under CI=true)
    line: int = 0


def load_corpus(path: Path) -> list[Entry]:
    """A corpus file: ``## category`` headings, then one entry a line:

        EXPECT[cwd=DIR,needs=PROG+PROG]: COMMAND

    (the brackets optional); lines indented by four spaces continue the command on a new line
    (heredocs); a line starting with ``#`` is a comment. A bad line raises ValueError naming
    it."""
    entries: list[Entry] = []
    category = ""
    pending: dict[str, Any] | None = None

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            entries.append(Entry(**pending))
            pending = None

    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("    ") and pending is not None:
            pending["command"] += "\n" + line[4:]
            continue
        flush()
        if line.startswith("## "):
            category = line[3:].strip()
            continue
        if not line.strip() or line.startswith("#"):
            continue
        head, sep, command = line.partition(": ")
        expect, _, options = head.partition("[")
        if not sep or expect not in EXPECTATIONS or (options and not options.endswith("]")):
            raise ValueError(f"{path.name}:{number}: not `EXPECT[options]: COMMAND`: {line!r}")
        if not category:
            raise ValueError(f"{path.name}:{number}: an entry before any `## category`")
        pending = {"command": command, "expect": expect, "category": category, "line": number}
        for option in filter(None, options[:-1].split(",")):
            key, _, value = option.partition("=")
            if key == "cwd":
                pending["cwd"] = value
            elif key == "needs":
                pending["needs"] = tuple(value.split("+"))
            else:
                raise ValueError(f"{path.name}:{number}: unknown option {key!r}")
    flush()
    return entries


# absolute words a corpus may use: programs run by path, the null device, and words that are
# not paths (a URL's `//`, a regular expression in awk or perl)
_NOT_OUTSIDE = ("/dev/null", "/bin/rm", "/usr/bin/env", "//", "/def/", "/1/")


def outside_paths(command: str) -> list[str]:
    """The absolute paths ``command`` names outside the sandbox: a corpus must have none (it
    runs as this user, and only the sandbox is thrown away)."""
    import re

    words = re.findall(r"""(?:^|[\s=<>|;&(:]['"]?)(/[^\s'";|&)]*)""", command)
    return [w for w in words if not w.startswith(_NOT_OUTSIDE)]


def missing_programs(entry: Entry) -> list[str]:
    return [p for p in entry.needs if p != "root" and shutil.which(p) is None] + (
        ["root"] if "root" in entry.needs and os.geteuid() != 0 else []
    )


@dataclass
class Outcome:
    entry: Entry
    verdicts: dict[str, Verdict]
    execution: Execution


@dataclass
class CorpusRun:
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: list[tuple[Entry, list[str]]] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def escapes(self) -> list[tuple[Outcome, str]]:
        """(outcome, client): allowed, and when run it changed a held file."""
        return [
            (o, c)
            for o in self.outcomes
            for c, v in o.verdicts.items()
            if not v.refused and o.execution.changed
        ]

    def false_refusals(self) -> list[tuple[Outcome, str]]:
        """(outcome, client): a command that changes no held file, refused."""
        return [
            (o, c)
            for o in self.outcomes
            for c, v in o.verdicts.items()
            if v.refused and o.entry.expect != "writes-held" and not o.execution.changed
        ]

    def unclear(self) -> list[tuple[Outcome, str]]:
        return [
            (o, c) for o in self.outcomes for c, v in o.verdicts.items() if "UNCLEAR" in v.reason
        ]

    def mislabelled(self) -> list[str]:
        """Entries whose run contradicts their label: the corpus is wrong, not the guard."""
        wrong = []
        for o in self.outcomes:
            e, x = o.entry, o.execution
            if x.returncode is None:
                wrong.append(f"line {e.line}: {e.command!r} timed out")
            elif e.expect == "writes-held" and not x.changed:
                wrong.append(
                    f"line {e.line}: {e.command!r} is labelled writes-held but changed no held"
                    f" file (exit {x.returncode}: {x.output.strip()[-300:]!r})"
                )
            elif e.expect != "writes-held" and x.changed:
                wrong.append(
                    f"line {e.line}: {e.command!r} is labelled {e.expect} but changed {x.changed}"
                )
        return wrong


def run_corpus(
    entries: Sequence[Entry],
    workdir: Path,
    *,
    clients: Sequence[str] = CLIENTS,
    samples: int = 15,
    workers: int = 2,
    prepare: Callable[[Path], None] | None = None,
    claim: Callable[[Any, Path], None] | None = None,
) -> CorpusRun:
    """Judge every entry with every client (one sandbox per entry), then run it there;
    about ``samples`` calls per client are also made as real ``coord hook`` processes."""
    from concurrent.futures import ThreadPoolExecutor

    started = time.monotonic()
    template = make_template(workdir / "template", prepare, claim)
    run = CorpusRun()
    runnable = []
    for entry in entries:
        missing = missing_programs(entry)
        if missing:
            run.skipped.append((entry, missing))
        else:
            runnable.append(entry)

    if os.environ.get("GUARD_ORACLE_REAL_HOOKS") == "1":  # every call a real process too
        samples = len(runnable)
    sample_every = max(1, len(runnable) // max(1, samples))
    with Judges(workdir / "template" / "home", clients, sample_every) as judges:

        def one(index_entry: tuple[int, Entry]) -> Outcome:
            index, entry = index_entry
            box = sandbox(template, workdir / f"cmd{index}")
            try:
                verdicts = judges.judge_all(box, entry.command, entry.cwd)
                return Outcome(entry, verdicts, execute(box, entry.command, entry.cwd))
            finally:
                remove(box.root)

        with ThreadPoolExecutor(max(1, workers)) as pool:
            run.outcomes = list(pool.map(one, enumerate(runnable)))
        run.disagreements = list(judges.disagreements)
    run.seconds = time.monotonic() - started
    return run


def place(outcome: Outcome) -> str:
    e = outcome.entry
    where = f" (in {e.cwd})" if e.cwd != "." else ""
    return f"line {e.line} [{e.category}] {e.command!r}{where}"


def escape_report(run: CorpusRun) -> list[str]:
    """One line per allowed command that changed a held file: which clients, which files."""
    clients: dict[int, list[str]] = {}
    outcomes: dict[int, Outcome] = {}
    for outcome, client in run.escapes():
        clients.setdefault(outcome.entry.line, []).append(client)
        outcomes[outcome.entry.line] = outcome
    return [
        f"{place(outcomes[n])}: allowed by {', '.join(who)}; "
        f"it changed {', '.join(outcomes[n].execution.changed)}"
        for n, who in sorted(clients.items())
    ]


def accepted_refusals(page: Path = GUARD_PAGE) -> list[str]:
    """The list in docs/files-and-the-guard.md ("Files: reservations and the guard"): the
    harmless commands coord refuses, each a bullet naming the command in backticks (``- none``
    for none)."""
    import re

    text = page.read_text(encoding="utf-8")
    if LIST_TITLE not in text:
        raise AssertionError(f"{page.name} has lost its {LIST_TITLE} paragraph")
    bullets: list[str] = []
    for line in text.split(LIST_TITLE, 1)[1].splitlines():
        if line.startswith("- "):
            bullets.append(line)
        elif bullets and not line.startswith("  "):  # past the list (a reason may wrap)
            break
    if not bullets:
        raise AssertionError(f"no list under {LIST_TITLE} in {page.name}")
    if bullets == ["- none"]:
        return []
    commands = []
    for bullet in bullets:
        found = re.match(r"- (`+) ?(.+?) ?\1(?::|$)", bullet)
        if not found:
            raise AssertionError(
                f"{page.name}: a bullet under {LIST_TITLE} names no command: {bullet!r}"
            )
        commands.append(found.group(2))
    return commands


def refusal_report(run: CorpusRun, accepted: Sequence[str]) -> list[str]:
    """What is wrong with this run's refusals of harmless commands: one the guard page's list does
    not name, or one it names (and this corpus holds) that some client no longer refuses."""
    refused: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    for outcome, client in run.false_refusals():
        refused.setdefault(outcome.entry.command, []).append(client)
        reasons[outcome.entry.command] = f"{place(outcome)}: {outcome.verdicts[client].reason}"
    problems = [
        f"refused, and not in the guard page's list: {reasons[c]} (by {', '.join(refused[c])})"
        for c in refused
        if c not in accepted
    ]
    judged = {
        o.entry.command: len(o.verdicts) for o in run.outcomes if o.entry.expect != "writes-held"
    }
    problems += [
        f"in the guard page's list, yet allowed by some client: {c!r} "
        f"(refused by {refused.get(c, [])})"
        for c in accepted
        if c in judged and len(refused.get(c, [])) != judged[c]
    ]
    return problems


def summary(run: CorpusRun) -> str:
    """Escapes per category and per client, and the false refusals, as text."""
    from collections import Counter

    escapes = run.escapes()
    by_category: Counter[str] = Counter()
    commands_by_category: dict[str, set[int]] = {}
    for o, _c in escapes:
        commands_by_category.setdefault(o.entry.category, set()).add(o.entry.line)
    for category, lines in commands_by_category.items():
        by_category[category] = len(lines)
    by_client = Counter(c for _o, c in escapes)
    writers = sum(1 for o in run.outcomes if o.execution.changed)
    escaped = len({o.entry.line for o, _ in escapes})
    lines = [
        f"{len(run.outcomes)} commands x {len(CLIENTS)} clients in {run.seconds:.1f} s; "
        f"{writers} change a held file when run; {escaped} of them allowed by some client",
        "escapes per client: " + ", ".join(f"{c} {by_client.get(c, 0)}" for c in CLIENTS),
        "escapes per category (commands):",
        *(f"  {cat}: {n}" for cat, n in sorted(by_category.items(), key=lambda x: -x[1])),
    ]
    return "\n".join(lines)
