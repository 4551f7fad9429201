"""The shell guard judged by running (issue 22): every command of tests/guard_corpus/shell.txt
goes through each client's real hook as agent B while agent A holds files, and is then run in a
scratch copy of the repository (tests/guard_oracle.py). An allowed command that changed a held
file is an escape; a refused command that changed none is a false refusal, accepted only when
the list in docs/files-and-the-guard.md names it.

The corpus runs once per session (about 30 s on two cores: ~730 commands x 4 clients, each
command in its own copy); the tests below read that one run.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import guard_oracle as oracle

CORPUS = oracle.CORPORA / "shell.txt"


@pytest.fixture(scope="module")
def entries() -> list[oracle.Entry]:
    return oracle.load_corpus(CORPUS)


@pytest.fixture(scope="module")
def corpus(entries: list[oracle.Entry]) -> Iterator[oracle.CorpusRun]:
    with oracle.scratch("guard-corpus-") as root:
        run = oracle.run_corpus(entries, root)
    print("\n" + oracle.summary(run))
    yield run


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


def test_no_corpus_names_a_path_outside_its_sandbox() -> None:
    outside = [
        f"{path.name}:{e.line}: {e.command!r} names {oracle.outside_paths(e.command)}"
        for path in sorted(oracle.CORPORA.glob("*.txt"))
        for e in oracle.load_corpus(path)
        if oracle.outside_paths(e.command)
    ]
    assert not outside, "use @TMP@, @HOME@ or @REPO@:\n" + "\n".join(outside)
    assert oracle.outside_paths("echo x >/etc/x; cp a '/tmp/b' s\"rc\"/a.py") == [
        "/etc/x",
        "/tmp/b",
    ]


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
    unclear = [f"{c}: {oracle.place(o)}: {o.verdicts[c].reason}" for o, c in corpus.unclear()]
    assert not unclear, "answers that neither refuse nor allow:\n" + "\n".join(unclear)


def test_no_allowed_command_changes_a_held_file(corpus: oracle.CorpusRun) -> None:
    escapes = oracle.escape_report(corpus)
    assert not escapes, (
        f"{len(escapes)} allowed commands changed a held file:\n"
        + "\n".join(escapes)
        + "\n"
        + oracle.summary(corpus)
    )


def test_harmless_commands_are_refused_only_as_the_guard_page_lists(
    corpus: oracle.CorpusRun,
) -> None:
    accepted = oracle.accepted_refusals()
    # the list names commands of the corpora (this one, and any other in tests/guard_corpus/)
    harmless = {
        e.command
        for path in sorted(oracle.CORPORA.glob("*.txt"))
        for e in oracle.load_corpus(path)
        if e.expect != "writes-held"
    }
    unknown = [c for c in accepted if c not in harmless]
    assert not unknown, (
        f"docs/files-and-the-guard.md lists commands no corpus holds as harmless: {unknown}"
    )
    problems = oracle.refusal_report(corpus, accepted)
    assert not problems, "\n".join(problems)


def test_the_reports_name_escapes_and_unlisted_refusals() -> None:
    """The judgement itself, on outcomes made by hand: an allowed command that changed a held
    file is an escape, a refused one that changed none is reported unless listed, and a
    listed command that is allowed again is reported too."""

    def outcome(command: str, expect: str, refused: bool, changed: list[str]) -> oracle.Outcome:
        entry = oracle.Entry(command, expect, "made by hand", line=len(command))
        verdicts = {c: oracle.Verdict(refused, "why" if refused else "") for c in oracle.CLIENTS}
        return oracle.Outcome(entry, verdicts, oracle.Execution(changed, 0))

    run = oracle.CorpusRun(
        outcomes=[
            outcome("rm src/a.py", "writes-held", False, ["src/a.py"]),
            outcome("rm src/b.py", "writes-held", True, ["src/b.py"]),
            outcome("ls", "harmless", True, []),
            outcome("cat x", "harmless", True, []),
            outcome("pwd", "harmless", False, []),
            outcome("echo x", "harmless", False, ["src/a.py"]),  # a corpus error
        ]
    )
    assert [line.split(": allowed")[0] for line in oracle.escape_report(run)] == [
        "line 6 [made by hand] 'echo x'",
        "line 11 [made by hand] 'rm src/a.py'",
    ]
    assert len(run.mislabelled()) == 1 and "'echo x' is labelled harmless" in run.mislabelled()[0]
    absent = oracle.Entry("x", "harmless", "made by hand", needs=("sh", "no-such-program-here"))
    assert oracle.missing_programs(absent) == ["no-such-program-here"]
    problems = oracle.refusal_report(run, ["cat x", "pwd"])
    assert len(problems) == 2
    assert problems[0].startswith(
        "refused, and not in the guard page's list: line 2 [made by hand] 'ls'"
    )
    assert problems[1].startswith("in the guard page's list, yet allowed by some client: 'pwd'")


def test_the_guard_page_list_is_read_as_written(tmp_path: Path) -> None:
    readme = tmp_path / "files-and-the-guard.md"
    title = oracle.LIST_TITLE
    readme.write_text(
        f"{title} Why:\n\n- `ls x`: one\n  wrapped\n- `` echo `a` ``: two\n\nLater.\n- `no`\n"
    )
    assert oracle.accepted_refusals(readme) == ["ls x", "echo `a`"]
    readme.write_text(f"{title} Why:\n\n- none\n")
    assert oracle.accepted_refusals(readme) == []
    readme.write_text(f"{title} Why:\n\n- ls x: no backticks\n")
    with pytest.raises(AssertionError, match="names no command"):
        oracle.accepted_refusals(readme)
    readme.write_text("# nothing\n")
    with pytest.raises(AssertionError, match="has lost"):
        oracle.accepted_refusals(readme)


def test_each_client_is_sent_its_own_documented_input(tmp_path: Path) -> None:
    """The hooks see each client's shape: its session field, and where the command runs said
    the client's way (Gemini: the project's root and a directory relative to it)."""
    box = oracle.Sandbox(tmp_path)
    (box.repo / "src").mkdir(parents=True)
    repo, sub = str(box.repo), str(box.repo / "src")
    claude = oracle.hook_input("claude", box, "ls", "src")
    assert (claude["tool_name"], claude["tool_input"]["command"], claude["cwd"]) == (
        "Bash",
        "ls",
        sub,
    )
    assert claude["session_id"] and claude["hook_event_name"] == "PreToolUse"
    codex = oracle.hook_input("codex", box, "ls", "src")
    assert (codex["tool_name"], codex["cwd"], codex["turn_id"]) == ("Bash", sub, "1")
    gemini = oracle.hook_input("gemini", box, "ls", "src")
    assert (gemini["tool_name"], gemini["cwd"]) == ("run_shell_command", repo)
    assert gemini["tool_input"] == {**gemini["tool_input"], "command": "ls", "dir_path": "src"}
    assert "dir_path" not in oracle.hook_input("gemini", box, "ls")["tool_input"]
    cursor = oracle.hook_input("cursor", box, "ls", "src")
    assert (cursor["command"], cursor["cwd"], cursor["workspace_roots"]) == ("ls", sub, [repo])
    assert cursor["conversation_id"] and "tool_name" not in cursor
    # and each answer is read as that client reads it
    deny = {
        "claude": '{"hookSpecificOutput": {"permissionDecision": "deny", '
        '"permissionDecisionReason": "no"}}',
        "gemini": '{"decision": "deny", "reason": "no"}',
        "cursor": '{"permission": "deny", "agent_message": "no"}',
    }
    for client, answer in deny.items():
        assert oracle.read_answer(client, 0, answer, "") == oracle.Verdict(True, "no")
        assert oracle.read_answer(client, 0, "", "") == oracle.Verdict(False, "")
        assert "UNCLEAR" in oracle.read_answer(client, 1, "", "boom").reason
        assert oracle.read_answer(client, 2, "", "no").refused
    assert "UNCLEAR" in oracle.read_answer("claude", 0, '{"decision": "deny"}', "").reason
