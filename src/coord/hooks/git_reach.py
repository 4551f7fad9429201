"""Which files of the working tree a git command could change, asked of git where it can say.

For each git command that rewrites the working tree (from git's own documentation: the
manual pages of git 2.x), ``reach`` returns a ``Reach``: how to find the files it could
change, said as a verb for the refusal, and what to do instead. git itself is the oracle
where it is exact and cheap, run only once another agent holds something in this working
tree (``coord.hooks.git_rewrites``):

- ``stash`` (push, save, plain, ``-p``, ``-k``, ``-S``): what ``git status`` lists as changed
  (staged only with ``-S``), with ``-u`` the untracked files, with ``-a`` the ignored ones too,
  within its pathspecs; ``stash pop`` / ``apply`` / ``branch``: the files in the stash
  (``git stash show --include-untracked``);
- ``reset --hard REV``: the files that differ between the working tree and REV (``git diff
  REV``: staged new files, which it deletes, and files REV has that the tree has untracked,
  which it overwrites, included); ``--merge``: those whose index differs from REV (its table:
  a staged change is lost, an unstaged one kept); ``--keep``: those REV changes from HEAD.
  ``--soft``, ``--mixed`` and ``reset [REV] -- PATHS`` change the index only: allowed;
- ``restore`` (``--worktree``, the default; ``--staged`` alone is the index only) and
  ``checkout [REV] -- PATHS`` / ``checkout .``: the files that differ from their source (the
  index, or REV) within the pathspecs;
- ``checkout BRANCH`` / ``switch``: the files that differ between HEAD and the branch (git
  keeps the other local changes), with ``-f`` / ``--discard-changes`` every file that differs
  from the branch; ``switch --orphan``: every tracked file; ``checkout -b NEW`` from HEAD: none;
- ``clean``: what ``git clean -n`` with the same options says it would remove;
- ``rm`` (not ``--cached``): the tracked files its pathspecs match; ``mv``: its operands;
- ``read-tree -u``, ``checkout-index``: the files that differ from the tree or the index;
- ``apply`` (not ``--cached``, ``--check``, ``--stat``...), ``am``: the files the patches
  name (``git apply --numstat``); a patch on standard input cannot be read;
- ``merge REV``: the files REV changed since the merge base (plus, with ``--autostash``,
  the changed files it stashes); ``rebase``, ``cherry-pick``, ``revert``: the files of the
  commits they apply and of the commits they check out; ``merge --abort``: as
  ``reset --merge``; ``pull``: commits it has yet to fetch, so it cannot be told;
- ``worktree remove`` / ``move``: that worktree's uncommitted, untracked and ignored files;
  ``submodule update`` / ``deinit`` / ``add``: the submodules' directories; ``clone DIR``,
  ``worktree add DIR``: the directory it creates; ``merge-file``, ``--output=FILE``,
  ``archive -o FILE``, ``bundle create FILE``: the file it writes;
- ``git config KEY VALUE`` of a key under which git runs a program (``core.fsmonitor``,
  ``core.hooksPath``, a filter: ``coord.hooks.git_options.runs_a_program``), ``bisect``,
  ``sparse-checkout``, ``filter-branch``, a rebase going on (``--continue``), ``rebase
  --exec``, an alias that runs a shell, a command git does not have: ``Unsure``.

A command that changes nothing in the tree (``status``, ``diff``, ``log``, ``add``,
``commit``, ``fetch``...) is answered without running anything. Stdlib only.
"""

from __future__ import annotations

from coord.hooks import git_history, git_named, git_tree
from coord.hooks.git_options import OUTPUT_READERS, READERS, Call, Unsure
from coord.hooks.git_oracle import Reach, git

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_MAX_ALIASES = 5  # an alias of an alias...: git itself stops a loop

# the subcommands of those that only read
_QUIET = {
    "bisect": frozenset({"log", "visualize", "view", "terms", "help"}),
    "sparse-checkout": frozenset({"list", "check-rules"}),
}
_CANNOT_TELL = {
    "bisect": "it checks out the commits it tests",
    "sparse-checkout": "it changes which files are checked out",
    "filter-branch": "it rewrites every commit and checks out the result",
    "rerere": "it writes recorded conflict resolutions into files",
    "merge-index": "it runs a program on the files in conflict",
    "merge-one-file": "it merges files in place",
    "gui": "it is interactive",
    "citool": "it is interactive",
    "for-each-repo": "it runs git commands in other repositories",
    "hook": "it runs the repository's hook scripts",
    "p4": "it imports commits and checks them out",
    "svn": "it imports commits and checks them out",
    "quiltimport": "it applies patches",
    "archimport": "it imports commits",
    "cvsimport": "it imports commits",
    "cvsexportcommit": "it applies commits to a CVS checkout",
}


def reach(call: Call, depth: int = 0) -> Reach | None:
    """What ``call`` could change in the working tree; None: nothing. ``Unsure`` when coord
    cannot tell (raised now, or by ``find``)."""
    sub = call.sub
    if sub is None or call.args[:1] == ["-h"] or "--help" in _before_dashes(call.args):
        return None
    if sub in READERS:
        return git_named.output(call) if sub in OUTPUT_READERS or sub == "bundle" else None
    if sub == "archive":
        return git_named.output(call)
    planner = _PLANNERS.get(sub)
    if planner is not None:
        return planner(call)
    if sub in _CANNOT_TELL:
        if call.args[:1] and call.args[0] in _QUIET.get(sub, ()):
            return None
        raise Unsure(_CANNOT_TELL[sub])
    expansion = _alias(call, sub)
    if expansion is None or depth >= _MAX_ALIASES:
        raise Unsure(f"`git {sub}` is not a git command coord knows (an add-on?)")
    if expansion.startswith("!"):
        raise Unsure(f"`git {sub}` is an alias that runs a shell command")
    import shlex

    try:
        words = shlex.split(expansion)
    except ValueError:
        raise Unsure(f"coord cannot read the alias `git {sub}`") from None
    if not words:
        return None
    call.sub, call.args = words[0], words[1:] + call.args
    return reach(call, depth + 1)


def _before_dashes(args: list[str]) -> list[str]:
    return args[: args.index("--")] if "--" in args else args


def _alias(call: Call, name: str) -> str | None:
    """What the alias ``git NAME`` stands for (a ``-c alias.NAME=...`` first); None if none."""
    key = f"alias.{name.lower()}"
    if key in call.settings:
        return call.settings[key]
    try:
        return git(call, "config", "--get", key).decode("utf-8", "replace").strip()
    except Unsure:
        return None


_PLANNERS: dict[str, Callable[[Call], Reach | None]] = {
    "stash": git_tree.stash,
    "reset": git_tree.reset,
    "restore": git_tree.restore,
    "checkout": git_tree.checkout,
    "switch": git_tree.switch,
    "clean": git_tree.clean,
    "rm": git_tree.rm,
    "mv": git_tree.mv,
    "read-tree": git_tree.read_tree,
    "checkout-index": git_tree.checkout_index,
    "apply": git_history.apply,
    "am": git_history.am,
    "merge": git_history.merge,
    "rebase": git_history.rebase,
    "cherry-pick": git_history.pick,
    "revert": git_history.pick,
    "pull": git_history.pull,
    "worktree": git_named.worktrees,
    "submodule": git_named.submodule,
    "clone": git_named.clone,
    "merge-file": git_named.merge_file,
    "mergetool": git_named.mergetool,
    "config": git_named.config,
}
