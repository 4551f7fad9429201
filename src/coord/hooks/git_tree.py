"""What git's commands on the working tree and the index could change: stash, reset,
restore, checkout, switch, clean, rm, mv, read-tree, checkout-index
(``coord.hooks.git_reach`` says how each is judged). Stdlib only."""

from __future__ import annotations

import os
import re

from coord.hooks.git_options import Call, Spec, Unsure, parse
from coord.hooks.git_oracle import (
    ASK,
    Reach,
    diff,
    git,
    here,
    names,
    remote_branch,
    rev_or_none,
    revision,
    revisions,
    status,
    top,
    tracked,
    union,
    unread,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.hooks.git_oracle import Found

_STASH_PUSH = Spec(
    "p|patch S|staged k|keep-index q|quiet u|include-untracked a|all m|message= "
    "pathspec-from-file= pathspec-file-nul"
)
_STASH_APPLY = Spec("index q|quiet")


def stash(call: Call) -> Reach | None:
    args = call.args
    sub = args[0] if args and not args[0].startswith("-") else "push"
    rest = args[1:] if args and not args[0].startswith("-") else args
    unread(rest)
    if sub in ("list", "show", "drop", "clear", "create", "store"):
        return None
    if sub in ("pop", "apply", "branch"):
        parsed = parse(rest, _STASH_APPLY)
        operands = parsed.operands[1:] if sub == "branch" else parsed.operands
        entry = operands[0] if operands else "stash@{0}"
        show = ["stash", "show", "--include-untracked", "--name-only", "-z", "--no-renames"]
        made_here = None
        if call.stashed is not None:  # `git stash push -- mine && git stash pop`
            entry, made_here = _after_a_push(entry, call.stashed)

        def stashed() -> Found:
            if made_here is not None:
                return made_here
            return names(git(call, *show, "--no-relative", *revisions([entry])), top(call))

        find = stashed
        if sub == "branch":  # it checks out the commit the stash was made on first
            find = union(lambda: diff(call, "HEAD", entry + "^1"), stashed)
        return Reach("would change", f"apply it where nobody holds those files, {ASK}", find)
    if sub not in ("push", "save"):
        raise Unsure(f"`git stash {sub}` is not a stash command coord knows")
    parsed = parse(rest, _STASH_PUSH)
    paths = parsed.pathspecs(call.cwd) + (parsed.operands if sub == "push" else [])
    everything = parsed.has("all")

    def stashed_away() -> Found:
        untracked = parsed.has("include-untracked") or everything
        staged = parsed.has("staged")
        return status(call, paths, staged=staged, untracked=untracked, ignored=everything)

    instead = "stash only your own files (`git stash push -- PATH...`)"
    return Reach("would put away", f"{instead}, {ASK}", stashed_away, stashes=True)


_STASH_ENTRY = re.compile(r"(?:stash@\{(\d+)\}|(\d+))")


def _after_a_push(entry: str, pushed: Found) -> tuple[str, Found | None]:
    """A stash named after an earlier ``git stash push`` on the same line made one: stash@{0}
    is that one (what it put away), stash@{N} the one that was stash@{N-1} before."""
    named = _STASH_ENTRY.fullmatch(entry)
    if named is None:
        raise Unsure(f"an earlier `git stash` on this line changes what `{entry}` names")
    number = int(named.group(1) or named.group(2))
    return (entry, pushed) if number == 0 else (f"stash@{{{number - 1}}}", None)


_RESET = Spec(
    "q|quiet no-refresh refresh mixed soft hard merge keep recurse-submodules? p|patch "
    "N|intent-to-add pathspec-from-file= pathspec-file-nul"
)


def reset(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _RESET)
    mode = parsed.last_of(("soft", "mixed", "hard", "merge", "keep")) or "mixed"
    if mode in ("soft", "mixed") or parsed.has("patch"):
        return None  # HEAD and the index only
    rev = parsed.operands[0] if parsed.operands else "HEAD"
    if mode == "hard":
        find = lambda: diff(call, rev)  # noqa: E731
    elif mode == "merge":
        find = lambda: diff(call, rev, cached=True)  # noqa: E731
    else:
        find = lambda: diff(call, "HEAD", rev)  # noqa: E731
    instead = "reset only your own files (`git restore --source=REV -- PATH...`)"
    return Reach("would overwrite", f"{instead}, {ASK}", find)


_RESTORE = Spec(
    "s|source= S|staged W|worktree ignore-unmerged overlay q|quiet recurse-submodules? "
    "progress m|merge conflict= 2|ours 3|theirs p|patch ignore-skip-worktree-bits "
    "pathspec-from-file= pathspec-file-nul"
)


def restore(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _RESTORE)
    staged, worktree_too = parsed.has("staged"), parsed.has("worktree")
    if staged and not worktree_too:
        return None  # the index only
    paths = parsed.operands + parsed.pathspecs(call.cwd)
    if not paths and parsed.has("patch"):
        paths = [":/"]  # `git restore -p` offers every change of the tree
    if not paths:
        return None  # git refuses a restore without a path
    source = parsed.value("source") or ("HEAD" if staged else None)
    revs = [source] if source else []
    return Reach(
        "would overwrite",
        f"restore only your own files, {ASK}",
        lambda: diff(call, *revs, paths=paths),
    )


_CHECKOUT = Spec(
    "b= B= l guess overlay q|quiet recurse-submodules? progress m|merge conflict= d|detach "
    "t|track? f|force orphan= overwrite-ignore ignore-other-worktrees 2|ours 3|theirs "
    "p|patch ignore-skip-worktree-bits pathspec-from-file= pathspec-file-nul"
)
_SWITCH = Spec(
    "c|create= C|force-create= guess discard-changes q|quiet recurse-submodules? progress "
    "m|merge conflict= d|detach t|track? f|force orphan= overwrite-ignore ignore-other-worktrees"
)
_SWITCH_INSTEAD = (
    "switch branches in a worktree of your own (`git worktree add ../DIR BRANCH`), or commit "
    "your own changes first; or ask"
)


def checkout(call: Call) -> Reach | None:
    """``checkout BRANCH`` switches; ``checkout [REV] [--] PATH...`` overwrites those paths
    from REV or the index. Without ``--`` git decides: a revision first, else paths."""
    unread(call.args)
    parsed = parse(call.args, _CHECKOUT)
    force = parsed.has("force")
    operands = parsed.operands
    listed = parsed.pathspecs(call.cwd)  # after -- and from --pathspec-from-file
    if any(parsed.value(o) for o in ("b", "B", "orphan")):
        if listed:
            return None  # git refuses to switch and update paths at once
        return _switch_to(call, operands[0] if operands else None, force=force)
    if listed or parsed.value("pathspec-from-file") is not None:
        return _paths_from(call, operands[:1], listed)
    if not operands:
        if parsed.has("patch"):
            return _paths_from(call, [], [])
        return _switch_to(call, None, force=force)
    if parsed.has("detach"):
        return _switch_to(call, operands[0], force=force)
    first, rest = operands[0], operands[1:]
    many = bool(rest) or parsed.has("patch")

    def target() -> Found:
        commit = rev_or_none(call, first)
        if commit is not None and many:  # REV PATH...: those paths from REV
            return diff(call, first, paths=rest or [":/"])
        if commit is None and not many and not os.path.lexists(os.path.join(call.cwd, first)):
            commit = remote_branch(call, first)  # --guess: a new branch from a remote's
        if commit is None:  # paths (git checkout FILE...): from the index
            return diff(call, paths=operands)
        return _switched(call, commit, force=force)

    return Reach("would overwrite", _SWITCH_INSTEAD, target)


def _paths_from(call: Call, source: list[str], paths: list[str]) -> Reach:
    return Reach(
        "would overwrite",
        f"check out only your own files, {ASK}",
        lambda: diff(call, *source, paths=paths or [":/"]),
    )


def _switch_to(call: Call, name: str | None, *, force: bool) -> Reach | None:
    if name in (None, "HEAD", "@") and not force:
        return None  # a new branch where HEAD is: the tree stays as it is

    def target() -> Found:
        commit = "HEAD" if name in (None, "HEAD", "@") else revision(call, name)
        if commit is None:
            raise Unsure(f"`{name}` names no commit coord can find")
        return _switched(call, commit, force=force)

    return Reach("would overwrite", _SWITCH_INSTEAD, target)


def _switched(call: Call, commit: str, *, force: bool) -> Found:
    """What checking out ``commit`` changes: the files HEAD and it disagree on (git keeps
    the other local changes, and refuses to overwrite one); forced, every local change too."""
    return diff(call, commit) if force else diff(call, "HEAD", commit)


def switch(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _SWITCH)
    force = parsed.has("force") or parsed.has("discard-changes")
    operands = parsed.operands
    if parsed.value("orphan"):  # an empty tree: every tracked file goes
        return Reach("would delete", _SWITCH_INSTEAD, lambda: tracked(call, []))
    if parsed.value("create") or parsed.value("force-create") or parsed.has("detach"):
        return _switch_to(call, operands[0] if operands else None, force=force)
    if not operands:
        return None  # git asks for a branch
    return _switch_to(call, operands[0], force=force)


_CLEAN = Spec("q|quiet n|dry-run f|force i|interactive d e|exclude= x X")


def clean(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _CLEAN)
    if parsed.has("dry-run"):
        return None
    # git clean -n with the same options lists exactly what it would remove (-n wins over -f;
    # the interactive menu could only remove less)
    oracle = ["clean", "-n"] + ["-f"] * parsed.count("force")
    oracle += [f"-{o}" for o in ("d", "x", "X") if parsed.has(o)]
    for pattern in parsed.values("exclude"):
        oracle += ["-e", pattern]
    oracle += ["--", *parsed.operands, *(parsed.paths or [])]

    def removed() -> Found:
        found = []
        for line in git(call, *oracle).split(b"\n"):
            if line.startswith(b"Would remove "):
                name = _unquote(line[len(b"Would remove ") :])
                found.append((os.path.join(call.cwd, name), name.endswith("/")))
        return found

    instead = "clean only your own paths (`git clean -f -- PATH...`; `git clean -n` lists them)"
    return Reach("would delete", f"{instead}, {ASK}", removed)


def _unquote(raw: bytes) -> str:
    """A path as git prints it: C-quoted ("tab\\tname", octal bytes) when core.quotePath
    finds it unusual."""
    if not raw.startswith(b'"') or not raw.endswith(b'"'):
        return os.fsdecode(raw)
    body, out, i = raw[1:-1], bytearray(), 0
    escapes = {b"n": 10, b"t": 9, b'"': 34, b"\\": 92, b"a": 7, b"b": 8, b"f": 12, b"r": 13}
    escapes[b"v"] = 11
    while i < len(body):
        if body[i : i + 1] == b"\\" and i + 1 < len(body):
            code = body[i + 1 : i + 2]
            if code.isdigit() and i + 3 < len(body):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(escapes.get(code, code[0]))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return os.fsdecode(bytes(out))


_RM = Spec(
    "n|dry-run q|quiet cached f|force r ignore-unmatch sparse pathspec-from-file= pathspec-file-nul"
)
_MV = Spec("v|verbose n|dry-run f|force k sparse")


def rm(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _RM)
    if parsed.has("cached") or parsed.has("dry-run"):
        return None
    paths = parsed.operands + parsed.pathspecs(call.cwd)
    if not paths:
        return None
    return Reach(
        "would delete",
        f"remove only your own files, {ASK}",
        lambda: tracked(call, paths),
    )


def mv(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _MV)
    operands = parsed.operands + (parsed.paths or [])
    if parsed.has("dry-run") or len(operands) < 2:
        return None

    def moved() -> Found:
        sources = [entry for o in operands[:-1] for entry in here(o, call)]
        destination = here(operands[-1], call)
        found = sources + destination
        if len(destination) == 1 and destination[0][1]:  # into a directory: DIR/NAME each
            into = destination[0][0]
            found += [(os.path.join(into, os.path.basename(p.rstrip("/"))), d) for p, d in sources]
        return found

    return Reach("would move", f"move only your own files, {ASK}", moved)


_READ_TREE = Spec(
    "index-output= empty v|verbose m trivial aggressive reset prefix= u "
    "exclude-per-directory= i n|dry-run no-sparse-checkout debug-unpack "
    "recurse-submodules? q|quiet"
)
_CHECKOUT_INDEX = Spec(
    "a|all ignore-skip-worktree-bits f|force q|quiet n|no-create u|index z stdin temp "
    "prefix= stage="
)


def read_tree(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _READ_TREE)
    if not parsed.has("u") or parsed.has("dry-run"):
        return None  # the index only
    instead = f"update only your own files, {ASK}"
    prefix = parsed.value("prefix")
    if prefix is not None:
        return Reach("would write", instead, lambda: [(os.path.join(top(call), prefix), True)])
    if parsed.has("empty") or not parsed.operands:
        return Reach("would delete", instead, lambda: tracked(call, []))
    trees = parsed.operands
    return Reach("would overwrite", instead, lambda: [e for t in trees for e in diff(call, t)])


def checkout_index(call: Call) -> Reach | None:
    unread(call.args)
    parsed = parse(call.args, _CHECKOUT_INDEX)
    if parsed.has("temp"):
        return None
    if parsed.has("stdin"):
        raise Unsure("it reads its paths from standard input")
    instead = f"check out only your own files, {ASK}"
    prefix = parsed.value("prefix")
    if prefix:  # FILE written as PREFIX + FILE
        where = prefix if prefix.endswith("/") else os.path.dirname(prefix) or "."
        return Reach("would write", instead, lambda: here(where, call, True))
    paths = parsed.operands + (parsed.paths or [])
    if not paths and not parsed.has("all"):
        return None
    return Reach("would overwrite", instead, lambda: diff(call, paths=paths or [":/"]))
