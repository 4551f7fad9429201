"""An oracle that executes: judge a shell command through each client's real hook, run it in a
scratch copy of the repository, and compare what happened to the files another agent holds.

Not a test file: tests/test_guard_corpus.py (and any corpus of its own, e.g. git's) use it.
The parts: ``guard_scene`` (the repository, its sandboxes, running a command there),
``guard_judge`` (the clients' hooks), ``guard_corpus_run`` (a corpus file, its run, reports);
this module names them all.

The scene (``make_template``): a git repository with a coord board, where agent A
(``HOLDER``) holds ``HELD`` through the real board API, with committed content *and*
uncommitted work in those files (A's work a checkout or a stash would lose), an untracked
held file, an executable held script, a held directory, a symlink from a free name to a held
file, and B's free files beside them. For git's commands: branches (``BRANCHES``) and a
stash (``STASHED``). Agent B is the client's session (the fixture's ``session_id``): nobody
gives B a name, as in real use.

Every command gets its own copy (``Sandbox``) at its own path: the hooks judge it there with
the tree untouched, then bash runs it there (``unshare --net`` where the kernel lets us, HOME
and TMPDIR inside the sandbox, a timeout), and the held files are compared before and after.
``@REPO@``, ``@TMP@`` and ``@HOME@`` in a command are the sandbox's repository, its scratch
directory outside the repository, and its HOME: a corpus never names a path outside the
sandbox.

A fresh ``coord hook`` process costs ~35 ms on an idle two-core machine (an in-process call
~2 ms): 4 clients x 800 commands would take two minutes of hooks alone, so ``Judges`` keeps
one driver process per client that feeds each hook input, as real stdin, to the same entry
the ``coord hook`` command calls (``coord.hooks.run_hook``); a sample of the calls is also
made as a real ``coord hook CLIENT EVENT`` process, and both answers must agree (``verdict``
is that real process, for one command). ``GUARD_ORACLE_REAL_HOOKS=1`` makes every call a
real process as well (minutes more for the shell corpus).
"""

from __future__ import annotations

from guard_corpus_run import (
    CORPORA,
    EXPECTATIONS,
    GUARD_PAGE,
    LIST_TITLE,
    CorpusRun,
    Entry,
    Outcome,
    accepted_refusals,
    escape_report,
    load_corpus,
    missing_programs,
    outside_paths,
    place,
    refusal_report,
    run_corpus,
    summary,
)
from guard_judge import CLIENTS, FIXTURES, HOOKS, Judges, Verdict, hook_input, read_answer, verdict
from guard_scene import (
    BRANCHES,
    COMMITTED,
    GIT_ENV,
    HELD,
    HOLDER,
    LEASE_SECONDS,
    STASHED,
    SYMLINKS,
    UNCOMMITTED,
    UNTRACKED,
    Execution,
    Sandbox,
    base_env,
    changed,
    execute,
    executes_harmlessly,
    is_held,
    make_template,
    remove,
    sandbox,
    scratch,
    snapshot,
)

# the names as the first version spelled them (other corpora's tests use them)
_base_env = base_env
_GIT_ENV = GIT_ENV

__all__ = [
    "BRANCHES",
    "CLIENTS",
    "COMMITTED",
    "CORPORA",
    "EXPECTATIONS",
    "FIXTURES",
    "GIT_ENV",
    "GUARD_PAGE",
    "HELD",
    "HOLDER",
    "HOOKS",
    "LEASE_SECONDS",
    "LIST_TITLE",
    "STASHED",
    "SYMLINKS",
    "UNCOMMITTED",
    "UNTRACKED",
    "CorpusRun",
    "Entry",
    "Execution",
    "Judges",
    "Outcome",
    "Sandbox",
    "Verdict",
    "accepted_refusals",
    "base_env",
    "changed",
    "escape_report",
    "execute",
    "executes_harmlessly",
    "hook_input",
    "is_held",
    "load_corpus",
    "make_template",
    "missing_programs",
    "outside_paths",
    "place",
    "read_answer",
    "refusal_report",
    "remove",
    "run_corpus",
    "sandbox",
    "scratch",
    "snapshot",
    "summary",
    "verdict",
]
