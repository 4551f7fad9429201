"""What git's commands that bring in other commits or other trees could change: apply,
am, merge, rebase, cherry-pick, revert, pull, worktree, submodule, clone, merge-file,
mergetool, and a reader's ``--output`` (``coord.hooks.git_reach`` says how each is judged).
Stdlib only."""

from __future__ import annotations

import os

from coord.fast import worktree
from coord.hooks.git_options import Call, Parsed, Spec, Unsure, parse, runs_a_program
from coord.hooks.git_oracle import (
    ASK,
    Reach,
    diff,
    git,
    here,
    names,
    revisions,
    status,
    top,
    tracked,
    unread,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.hooks.git_oracle import Found

_APPLY_PASSED = "p= R|reverse directory= include= exclude= unidiff-zero recount inaccurate-eof"
_APPLY = Spec(
    f"{_APPLY_PASSED} no-add stat numstat summary check index N|intent-to-add cached "
    "unsafe-paths apply 3|3way build-fake-ancestor= z C= whitespace= ignore-space-change "
    "ignore-whitespace reject allow-overlap v|verbose q|quiet allow-empty binary "
    "allow-binary-replacement"
)
_AM = Spec(
    "i|interactive 3|3way q|quiet s|signoff u|utf8 k|keep keep-non-patch m|message-id "
    "keep-cr c|scissors quoted-cr= whitespace= ignore-space-change ignore-whitespace "
    "directory= exclude= include= C= p= patch-format= reject resolvemsg= continue "
    "r|resolved skip abort quit show-current-patch? allow-empty "
    "committer-date-is-author-date ignore-date rerere-autoupdate S|gpg-sign? empty="
)


def apply(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _APPLY)
    reports = any(parsed.has(o) for o in ("stat", "numstat", "summary", "check"))
    if parsed.has("cached") or (reports and not parsed.has("apply")):
        return None
    return _patched(call, parsed, parsed.operands + (parsed.paths or []), "apply")


def am(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _AM)
    if parsed.has("quit") or parsed.has("show-current-patch"):
        return None
    if any(parsed.has(o) for o in ("continue", "resolved", "skip", "abort")):
        raise Unsure("it goes on with a series of patches already under way")
    if parsed.value("patch-format") not in (None, "mbox"):
        raise Unsure("coord reads mailboxes only")
    return _patched(call, parsed, parsed.operands + (parsed.paths or []), "am")


def _patched(call: Call, parsed: Parsed, patches: list[str], sub: str) -> Reach:
    if not patches or "-" in patches:
        raise Unsure("it reads the patch from standard input")
    for patch in patches:
        path = os.path.join(call.cwd, patch)
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise Unsure(f"coord cannot read the patch {patch} (a mailbox directory is not read)")
    passed: list[str] = []
    for name in ("p", "directory", "include", "exclude"):
        passed += [f"-p{v}" if name == "p" else f"--{name}={v}" for v in parsed.values(name)]
    passed += [
        f"--{o}" for o in ("reverse", "unidiff-zero", "recount", "inaccurate-eof") if parsed.has(o)
    ]

    def named() -> Found:
        out = git(call, "apply", "--numstat", "-z", *passed, "--", *patches)
        root = top(call) if worktree.toplevel(call.cwd) or call.git_dir else call.cwd
        names = [n for n in out.split(b"\0") if n]
        found = []
        for entry in names:
            name = entry.rsplit(b"\t", 1)[-1] if b"\t" in entry else entry
            if name:
                found.append((os.path.join(root, os.fsdecode(name)), False))
                if parsed.has("reject"):
                    found.append((os.path.join(root, os.fsdecode(name) + ".rej"), False))
        return found

    return Reach(
        "would patch",
        f"apply only patches of your own files (`git {sub} --include=PATH`), {ASK}",
        named,
    )


_MERGE = Spec(
    "n stat summary log? squash commit e|edit cleanup= ff ff-only rerere-autoupdate "
    "verify-signatures s|strategy= X|strategy-option= m|message= F|file= into-name= "
    "v|verbose q|quiet abort quit continue allow-unrelated-histories progress S|gpg-sign? "
    "autostash overwrite-ignore signoff verify"
)
_REBASE = Spec(
    "onto= keep-base verify q|quiet v|verbose n|no-stat stat signoff "
    "committer-date-is-author-date reset-author-date ignore-date C= ignore-whitespace "
    "whitespace= f|force-rebase ff continue skip abort quit edit-todo show-current-patch "
    "apply m|merge i|interactive rerere-autoupdate empty= autosquash update-refs S|gpg-sign? "
    "autostash x|exec= r|rebase-merges? fork-point s|strategy= X|strategy-option= root "
    "reschedule-failed-exec reapply-cherry-picks"
)
_PICK = Spec(
    "quit continue abort skip cleanup= n|no-commit e|edit s|signoff m|mainline= "
    "rerere-autoupdate strategy= X|strategy-option= S|gpg-sign? x ff allow-empty "
    "allow-empty-message keep-redundant-commits reference"
)
_HISTORY_INSTEAD = (
    "do it in a worktree of your own (`git worktree add ../DIR`), or after the holder has "
    "committed and released its files; or ask"
)


def merge(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _MERGE)
    if parsed.has("quit") or parsed.has("continue"):
        return None
    if parsed.has("abort"):  # git reset --merge: a staged change is lost

        def aborted() -> Found:
            if not _under_way(call, "MERGE_HEAD"):
                return []  # no merge to abort: git says so and changes nothing
            return diff(call, "HEAD", cached=True)

        return Reach("would overwrite", _HISTORY_INSTEAD, aborted)
    revs = ["@{-1}" if r == "-" else r for r in parsed.operands] or ["@{upstream}"]
    explicit = parsed.opts.get("autostash")

    def merged() -> Found:
        found = [e for rev in revs for e in diff(call, f"HEAD...{rev}")]
        stash = explicit[-1] if explicit else _setting(call, "merge.autostash")
        if stash:
            found += status(call, [], untracked=False, ignored=False)
        return found

    return Reach("would change", _HISTORY_INSTEAD, merged)


def _under_way(call: Call, *marks: str) -> bool:
    """Is a merge or rebase under way: does one of these exist in the git directory?"""
    asked = [a for mark in marks for a in ("--git-path", mark)]
    where = git(call, "rev-parse", *asked).decode().splitlines()
    return any(os.path.exists(os.path.join(call.cwd, w)) for w in where)


def _setting(call: Call, name: str) -> bool:
    if name in call.settings:
        return call.settings[name].lower() in ("true", "yes", "on", "1", "")
    try:
        return git(call, "config", "--type=bool", "--get", name).strip() == b"true"
    except Unsure:
        return False  # not set


def rebase(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _REBASE)
    if parsed.has("quit") or parsed.has("show-current-patch"):
        return None
    if parsed.has("abort"):  # back to where it started: git reset --hard

        def aborted() -> Found:
            if not _under_way(call, "rebase-merge", "rebase-apply"):
                return []  # no rebase to abort: git says so and changes nothing
            return diff(call, "ORIG_HEAD")

        return Reach("would overwrite", _HISTORY_INSTEAD, aborted)
    if parsed.has("continue") or parsed.has("skip") or parsed.has("edit-todo"):
        raise Unsure("it goes on with a rebase already under way")
    if parsed.values("exec"):
        raise Unsure("it runs commands of its own (--exec)")
    operands = parsed.operands
    root = parsed.has("root")
    upstream = None if root else (operands[0] if operands else "@{upstream}")
    branch = operands[0 if root else 1] if len(operands) > (0 if root else 1) else None
    onto = parsed.value("onto") or upstream
    tip = branch or "HEAD"

    explicit = parsed.opts.get("autostash")

    def rebased() -> Found:
        found = []
        if explicit[-1] if explicit else _setting(call, "rebase.autostash"):
            found += status(call, [], untracked=False, ignored=False)  # the files it stashes
        if branch is not None:  # it checks out the branch first
            found += diff(call, "HEAD", branch)
        if upstream is not None:
            found += diff(call, f"{upstream}...{tip}")  # the commits it replays
        else:
            found += tracked(call, [])
        if onto is not None and not parsed.has("keep-base"):
            found += diff(call, tip, onto)  # the commit it starts from
        return found

    return Reach("would change", _HISTORY_INSTEAD, rebased)


def pick(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _PICK)
    if parsed.has("quit"):
        return None
    if any(parsed.has(o) for o in ("continue", "skip", "abort")):
        raise Unsure(f"it goes on with a {call.sub} already under way")
    revs = parsed.operands
    if not revs:
        return None

    def picked() -> Found:
        log = ["log", "--no-walk", "--diff-merges=separate", "--name-only", "--no-renames"]
        out = git(call, *log, "--no-relative", "--format=", "-z", *revisions(revs), "--")
        return names(out, top(call))

    return Reach("would change", _HISTORY_INSTEAD, picked)


def pull(call: Call) -> Reach:
    raise Unsure(
        "it merges commits it has yet to fetch; run `git fetch`, then `git merge` or "
        "`git rebase` what it fetched, which coord judges on what they change"
    )


_WORKTREE_ADD = Spec(
    "f|force d|detach checkout lock reason= q|quiet track guess-remote orphan b= B="
)
_WORKTREE_REMOVE = Spec("f|force")


def worktrees(call: Call) -> Reach | None:
    sub, rest = (call.args[0], call.args[1:]) if call.args else ("list", [])
    unread(rest)
    if sub in ("remove", "move"):
        parsed = parse(rest, _WORKTREE_REMOVE)
        if not parsed.operands:
            return None
        other = Call(os.path.join(call.cwd, parsed.operands[0]))

        def uncommitted() -> Found:  # committed files are in git; these are lost with it
            return status(other, [], untracked=True, ignored=True)

        verb = "would delete" if sub == "remove" else "would move away"
        instead = "remove only a worktree whose uncommitted files are yours"
        return Reach(verb, f"{instead}, {ASK}", uncommitted)
    if sub == "add":
        parsed = parse(rest, _WORKTREE_ADD)
        if parsed.operands:
            path = parsed.operands[0]
            return Reach(
                "would write into", f"add it elsewhere, {ASK}", lambda: here(path, call, True)
            )
    return None


_SUBMODULE_VALUE = frozenset(
    {"--reference", "--depth", "--jobs", "-j", "--filter", "-b", "--branch", "--name"}
)


def submodule(call: Call) -> Reach | None:
    args = [a for a in call.args if a != "--quiet" and a != "-q"]
    sub, rest = (args[0], args[1:]) if args else ("status", [])
    unread(rest)
    if sub not in ("update", "deinit", "foreach", "add"):
        return None
    if sub == "foreach":
        raise Unsure("it runs a command in every submodule")
    operands, skip = [], False
    for arg in rest:
        if skip:
            skip = False
        elif arg in _SUBMODULE_VALUE:
            skip = True
        elif not arg.startswith("-"):
            operands.append(arg)
    if sub == "add":  # add URL [PATH]: the directory it clones into
        if not operands:
            return None
        path = operands[1] if len(operands) > 1 else _cloned_name(operands[0])
        return Reach("would write into", f"add it elsewhere, {ASK}", lambda: here(path, call, True))

    def checked_out() -> Found:
        if operands:
            return [entry for p in operands for entry in here(p, call, True)]
        return [(os.path.join(top(call), p), True) for p in _submodule_paths(top(call))]

    return Reach(
        "would check out", f"name only submodules nobody holds files in, {ASK}", checked_out
    )


def _submodule_paths(root: str) -> list[str]:
    """The submodules' paths, from ``.gitmodules`` (none without one)."""
    try:
        with open(os.path.join(root, ".gitmodules"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError):
        raise Unsure("coord cannot read .gitmodules") from None
    paths = []
    for line in lines:
        key, eq, value = line.strip().partition("=")
        if eq and key.strip() == "path":
            paths.append(value.strip().strip('"'))
    return paths


def _cloned_name(url: str) -> str:
    """The directory ``git clone URL`` makes: the URL's last name without ``.git``."""
    name = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return name[:-4] if name.endswith(".git") else name


_CLONE_VALUE = frozenset(
    """-o --origin -b --branch -u --upload-pack --reference --reference-if-able
    --separate-git-dir --depth --shallow-since --shallow-exclude -c --config
    --server-option -j --jobs --template --filter --bundle-uri""".split()  # noqa: SIM905
)


def clone(call: Call) -> Reach | None:
    unread(call.args)
    operands, skip = [], False
    for arg in call.args:
        if skip:
            skip = False
        elif arg in _CLONE_VALUE:
            skip = True
        elif not arg.startswith("-"):
            operands.append(arg)
    if not operands:
        return None
    path = operands[1] if len(operands) > 1 else _cloned_name(operands[0])
    return Reach("would write into", f"clone it elsewhere, {ASK}", lambda: here(path, call, True))


def merge_file(call: Call) -> Reach | None:
    unread(call.args)
    operands, skip = [], False
    for arg in call.args:
        if skip:
            skip = False
        elif arg == "-L":
            skip = True
        elif arg in ("-p", "--stdout"):
            return None
        elif not arg.startswith("-"):
            operands.append(arg)
    if not operands:
        return None
    return Reach(
        "would write",
        f"merge into your own files, {ASK}",
        lambda: here(operands[0], call, False),
    )


def mergetool(call: Call) -> Reach | None:
    unread(call.args)
    paths = [a for a in call.args if not a.startswith("-")]

    def resolved() -> Found:  # the files in conflict, and the .orig copies it keeps
        args = ["diff", "--name-only", "-z", "--no-relative", "--diff-filter=U", "--", *paths]
        found = names(git(call, *args), top(call))
        return found + [(p + ".orig", False) for p, _ in found]

    return Reach("would write", f"resolve only your own files, {ASK}", resolved)


_CONFIG_VALUE = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment"})
_CONFIG_READS = ("--get", "--list", "--unset", "--remove-section", "--rename-section", "-l")


def config(call: Call) -> Reach | None:
    """``git config KEY VALUE`` changes no file of the tree, but a key under which git runs a
    program (``core.fsmonitor``, ``core.hooksPath``, a filter) makes the next git command run
    it: ``Unsure``, as ``-c KEY=VALUE`` is."""
    args = call.args
    if "-e" in args or "--edit" in args:
        raise Unsure("it opens an editor on git's settings")
    if any(a.startswith(_CONFIG_READS) for a in args):
        return None
    operands, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in _CONFIG_VALUE:
            skip = True
        elif not arg.startswith("-"):
            operands.append(arg)
    if operands[:1] == ["set"]:  # git 2.46's `git config set KEY VALUE`
        operands = operands[1:]
    if len(operands) >= 2 and runs_a_program(operands[0], operands[1]):
        raise Unsure(f"`git config {operands[0]}` can make git run a program coord cannot read")
    return None


def output(call: Call) -> Reach | None:
    """A reader's ``--output=FILE`` (``archive -o FILE``, ``bundle create FILE``): that file."""
    args, written = call.args, []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg.startswith("--output="):
            written.append(arg[len("--output=") :])
        elif arg == "--output" or (arg == "-o" and call.sub == "archive"):
            written += args[i + 1 : i + 2]
        elif arg.startswith("-o") and len(arg) > 2 and call.sub == "archive":
            written.append(arg[2:])
    if call.sub == "bundle" and args[:1] == ["create"] and len(args) > 1:
        written += [a for a in args[1:] if not a.startswith("-")][:1]
    if not written:
        return None
    unread(written)
    return Reach(
        "would write",
        f"write it elsewhere, {ASK}",
        lambda: [entry for w in written for entry in here(w, call, False)],
    )
