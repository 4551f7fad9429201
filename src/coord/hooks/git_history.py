"""What git's commands that bring in other commits or patches could change: apply, am,
merge, rebase, cherry-pick, revert, pull (``coord.hooks.git_reach`` says how each is judged).
Stdlib only."""

from __future__ import annotations

import os

from coord.fast import worktree
from coord.hooks.git_options import Call, Parsed, Spec, Unsure, parse
from coord.hooks.git_oracle import (
    ASK,
    Reach,
    diff,
    git,
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
