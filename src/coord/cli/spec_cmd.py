"""`coord spec lint|import|status|sync DOC`: a design document's work packages as a queue.

The document is read where it lives, in the caller's working tree, but for each package's
checks, which come from its committed text (``coord.spec.committed``: they run in other
agents' trees); the board only ever sees the parsed packages. ``lint`` and ``status`` work
without a board (the predicate evaluated from the document alone); ``import`` and ``sync``
need one.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from coord.errors import BoardNotFound, InvalidInput
from coord.fast.files import write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from coord.cli.context import Context, Result
    from coord.client.flow import Session
    from coord.spec.document import Problem, SpecDocument

EXIT_PROBLEMS = 1
# problems that make an import meaningless: the board would get a wrong graph
BLOCKS_IMPORT = {"malformed_entry", "bad_dependencies", "duplicate_id", "unknown_dependency"}


def args_spec(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=["lint", "import", "status", "sync"],
        help="lint: check the document (exit 1 on problems); import: packages become items; "
        "status: what is claimable and who holds what; sync: tick the boxes of done packages",
    )
    p.add_argument("doc", help="the design document (Markdown)")
    p.add_argument(
        "--stale-days",
        type=float,
        default=None,
        metavar="N",
        help="lint: a reservation line older than N days (git blame) is stale (default 14)",
    )
    p.add_argument(
        "--prefix",
        default=None,
        help="import/status/sync: package ids on the board carry this prefix (two documents)",
    )
    p.add_argument(
        "--adopt",
        action="store_true",
        help="import: reservation lines become claims (package) or file holds (track)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="import: say what would be created, updated, closed and adopted, change nothing; "
        "sync: show the edit as a diff, write nothing",
    )
    p.add_argument(
        "--git",
        metavar="BASE..HEAD",
        help="lint: check the changes to the document in this range of commits (for CI)",
    )


# which action each option is for: one given to another action is refused, never ignored
# (`coord spec import DOC --dry-run` once created the items)
_OPTION_ACTIONS = {
    "stale_days": ("--stale-days", ("lint",)),
    "git": ("--git", ("lint",)),
    "prefix": ("--prefix", ("import", "status", "sync")),
    "adopt": ("--adopt", ("import",)),
    "dry_run": ("--dry-run", ("import", "sync")),
}


def cmd_spec(args: argparse.Namespace, ctx: Context) -> Result:
    from coord.spec import parse

    for name, (option, actions) in _OPTION_ACTIONS.items():
        if getattr(args, name) not in (None, False) and args.action not in actions:
            raise InvalidInput(
                f"{option} is for `coord spec {' or '.join(actions)}`, not `coord spec "
                f"{args.action}`: drop it"
            )
    if args.stale_days is None:
        args.stale_days = 14.0
    args.prefix = args.prefix or ""
    doc_path = Path(args.doc)
    if not doc_path.is_file():
        raise InvalidInput(f"no such document: {args.doc}")
    doc = parse.parse_file(doc_path)
    action = {"lint": _lint, "import": _import, "status": _status, "sync": _sync}[args.action]
    return action(args, ctx, doc)


# --- lint ------------------------------------------------------------------------------------


def _lint(args: argparse.Namespace, ctx: Context, doc: SpecDocument) -> Result:
    from coord.spec.lint import lint

    if args.git:
        from coord.gitmode.history import lint_range

        found = lint_range(Path(args.doc), args.git)
        document = {"problems": [p.to_dict() for p in found]}
        if not found:
            return document, f"{args.doc}: the changes in {args.git} keep the protocol"
        return document, _problem_lines(args.doc, found), EXIT_PROBLEMS

    problems = lint(doc, repo_root=_git_root(Path(args.doc)), stale_days=args.stale_days)
    document = {"problems": [p.to_dict() for p in problems]}
    if not problems:
        return document, f"{args.doc}: {len(doc.packages)} packages, no problems"
    return document, _problem_lines(args.doc, problems), EXIT_PROBLEMS


def _problem_lines(path: str, problems: list[Problem]) -> str:
    return "\n".join(f"{path}:{p.line}: {p.code}: {p.message}" for p in problems)


# --- import ----------------------------------------------------------------------------------


def _import(args: argparse.Namespace, ctx: Context, doc: SpecDocument) -> Result:
    from coord.spec.committed import committed_checks
    from coord.spec.lint import lint
    from coord.spec.protocol import kept_for, working_tree

    problems = lint(doc)
    blocking = [p for p in problems if p.code in BLOCKS_IMPORT]
    if blocking:
        raise InvalidInput(
            f"{args.doc} was not imported; nothing on the board changed. Fix these first "
            f"(`coord spec lint {args.doc}`):\n{_problem_lines(args.doc, blocking)}",
            problems=[p.to_dict() for p in blocking],
        )
    spec = ctx.session.document_path(args.doc)
    # checks run in other agents' working trees: they come from git, not from this tree
    checks, uncommitted = committed_checks(doc, Path(args.doc))
    # the board keeps these from everyone else (one predicate), reading its own tree
    reserved = kept_for(doc, working_tree(ctx.board_dir.parent))
    tracks = {t.id: t for t in doc.tracks}
    adopt: list[dict[str, Any]] = []
    if args.adopt:
        for r in doc.reservations:
            if r.package is not None:
                adopt.append({"package": r.package, "user": r.user, "line": r.line})
            elif r.track in tracks:
                files = tracks[r.track].files
                adopt.append({"track": r.track, "user": r.user, "line": r.line, "files": files})
    body: dict[str, Any] = {
        "agent": ctx.agent(required=False),
        "spec": spec,
        "packages": [_wire(p, reserved.get(p.id), checks[p.id]) for p in doc.packages],
        "prefix": args.prefix,
        "adopt": adopt,
    }
    if args.dry_run:
        body["dry_run"] = True
    if doc.escalate_to:
        body["escalate_to"] = doc.escalate_to
    result = ctx.client.post("/v1/spec:import", body)
    result["reservations"] = [
        {"package": r.package, "track": r.track, "user": r.user, "line": r.line}
        for r in doc.reservations
    ]
    result["warnings"] = [p.to_dict() for p in problems + uncommitted]
    if not result.get("dry_run"):
        _remember_adopted(ctx, result)
    return result, _import_text(args.doc, result)


def _wire(package: Any, reserved_by: str | None, checks: list[str]) -> dict[str, Any]:
    """A package as the board takes it, with ``checks`` from the committed document."""
    wired = {
        "id": package.id,
        "title": package.title,
        "done": package.done,
        "line": package.line,
        "dependencies": package.dependencies,
        "files": package.files,
        "checks": checks,
        "description": package.description,
        "acceptance": package.acceptance,
        "track": package.track,
    }
    if reserved_by is not None:
        wired["reserved_by"] = reserved_by
    return wired


def _remember_adopted(ctx: Context, result: dict[str, Any]) -> None:
    from coord.client import tokens

    for adopted in result.get("adopted", []):
        if adopted.get("token"):
            key = str(ctx.args.prefix or "") + adopted["package"]
            tokens.remember_claim(
                ctx.board_dir,
                adopted["user"],
                {"id": key, "token": adopted["token"], "item": {"key": key}},
            )


def _import_text(path: str, result: dict[str, Any]) -> str:
    dry = bool(result.get("dry_run"))
    lines = [f"{path} → board (dry run: nothing was changed):" if dry else f"{path} → board:"]
    for name in ("created", "updated", "unchanged", "closed", "removed"):
        ids = result.get(name) or []
        if ids:
            shown = f"would be {name}" if dry and name != "unchanged" else name
            lines.append(f"  {shown:<{19 if dry else 10}}{len(ids):>4}  {' '.join(ids)}")
    for conflict in result.get("conflicts", []):
        lines.append(f"  conflict: {conflict['message']}")
    for r in result.get("reservations", []):
        what = r["package"] or f"track {r['track']}"
        lines.append(f"  reservation line {path}:{r['line']}: {what} by @{r['user']}")
    for adopted in result.get("adopted", []):
        what = adopted.get("package") or f"track {adopted.get('track')}"
        lines.append(f"  {'would adopt' if dry else 'adopted'}: {what} for {adopted['user']}")
    for missed in result.get("not_adopted", []):
        what = missed.get("package") or f"track {missed.get('track')}"
        lines.append(f"  not adopted: {what} for {missed['user']}: {missed['reason']}")
    for warning in result.get("warnings", []):
        lines.append(f"  warning {path}:{warning['line']}: {warning['code']}: {warning['message']}")
    if result.get("removed"):
        lines.append("  (removed packages stay on the board: cancel them with `coord cancel`)")
    return "\n".join(lines)


# --- status ----------------------------------------------------------------------------------


def _status(args: argparse.Namespace, ctx: Context, doc: SpecDocument) -> Result:
    from coord.client import specs

    document = specs.status(_session(ctx), args.doc, prefix=args.prefix or None, doc=doc)
    return document, _status_text(document)


def _session(ctx: Context) -> Session | None:
    """The board's side of the document, or None where there is no board (status then reads
    the document alone)."""
    try:
        ctx.board_dir  # noqa: B018 - finds the board, or raises
    except BoardNotFound:
        return None
    return ctx.session


def _status_text(document: dict[str, Any]) -> str:
    rows = [("ID", "STATE", "HOLDER", "WAITS ON", "TITLE")]
    ready = set(document["claimable"])
    for p in document["packages"]:
        board = p.get("board") or {}
        if p["done"]:
            state = "done"
        elif board.get("state") in ("claimed", "needs_human"):
            state = board["state"]
        elif p["id"] in ready:
            state = "claimable"
        elif p["reserved_by"]:
            state = "reserved"
        elif p["waiting_on"]:
            state = "waiting"
        else:
            state = "held files"
        holder = board.get("claimed_by") or p["reserved_by"] or ""
        rows.append((p["id"], state, holder, " ".join(p["waiting_on"]), p["title"]))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4]
        for row in rows
    ]
    # one pair of parentheses: "(document only (not imported))" read as a doubled one
    source = "document and board" if document["imported"] else "document only, not imported"
    lines.append(f"claimable now ({source}): {' '.join(document['claimable']) or 'nothing'}")
    return "\n".join(lines)


# --- sync ------------------------------------------------------------------------------------


def _sync(args: argparse.Namespace, ctx: Context, doc: SpecDocument) -> Result:
    """Tick the boxes of packages done on the board: one minimal edit, never an untick. The
    reservation lines of ticked packages stay (sync writes none) and are named, with their
    lines: `coord spec lint` fails on each until it is removed."""
    from coord.client import specs
    from coord.spec import parse

    session = _session(ctx)
    board = None
    if session is not None:
        spec = session.document_path(args.doc)
        board = specs.board_items(session, spec, doc, prefix=args.prefix or None)
    if board is None:
        raise InvalidInput(f"{args.doc} is not on the board: `coord spec import {args.doc}` first")
    to_tick = [p for p in doc.packages if not p.done and board.get(p.id, {}).get("state") == "done"]
    path = Path(args.doc)
    diff = ""
    synced, synced_text = doc, None
    if to_tick:
        before, after = _ticked(path, [(p.line, p.id) for p in to_tick])
        # the document as the edit leaves it (the parser's own reading)
        synced, synced_text = parse.parse(after, args.doc), after
        if args.dry_run:  # the edit it would make, as `git diff` would show it
            import difflib

            diff = "".join(
                difflib.unified_diff(
                    before.splitlines(keepends=True),
                    after.splitlines(keepends=True),
                    fromfile=f"a/{args.doc}",
                    tofile=f"b/{args.doc}",
                    n=0,
                )
            )
        else:
            write_atomic(path, after.encode("utf-8"))
    ticked = [p.id for p in to_tick]
    verb = "would tick" if args.dry_run else "ticked"
    text = f"{verb} {len(ticked)} box{'' if len(ticked) == 1 else 'es'} in {args.doc}"
    if ticked:
        text += ": " + " ".join(ticked)
    if diff:
        text += "\n" + diff.rstrip("\n")
    if synced_text is None:  # nothing to tick: the document as it is
        synced_text = path.read_bytes().decode("utf-8", errors="replace")
    left = _reservations_left(synced, synced_text)
    if left:
        one = len(left) == 1
        text += (
            f"\nleft to remove: {len(left)} reservation line{'' if one else 's'} of "
            f"{'a ticked package' if one else 'ticked packages'} (sync writes no reservation; "
            f"`coord spec lint` fails on {'it' if one else 'each'}: reservation_on_done):"
        )
        text += "".join(f"\n  {args.doc}:{r['line']}: {r['text']}" for r in left)
    document = {
        "spec": args.doc,
        "ticked": ticked,
        "dry_run": args.dry_run,
        "reservations_left": [{k: r[k] for k in ("package", "user", "line")} for r in left],
    }
    if args.dry_run:
        document["diff"] = diff
    return document, text


def _reservations_left(doc: SpecDocument, text: str) -> list[dict[str, Any]]:
    """The reservation lines of ticked packages (lint's ``reservation_on_done``, judged on
    the document as sync leaves it), each with its user and its text."""
    from coord.cli.render import one_line
    from coord.spec.lint import reservations_on_done

    lines = text.removeprefix("\ufeff").split("\n")
    users = {(r.line, r.package): r.user for r in doc.reservations}
    return [
        {
            "package": problem.package,
            "user": users.get((problem.line, problem.package)),
            "line": problem.line,
            "text": one_line(lines[problem.line - 1].strip()) if problem.line <= len(lines) else "",
        }
        for problem in reservations_on_done(doc)
    ]


def _ticked(path: Path, entries: list[tuple[int, str]]) -> tuple[str, str]:
    """The document's text, and that text with ``[ ]`` turned into ``[x]`` on exactly these
    entries, every other byte kept (the one ticker, ``coord.spec.edit.tick``, that ``coord
    git done`` uses too)."""
    from coord.spec import edit

    again = " nothing was written (re-run after saving the document)"
    try:  # parse_file read it as UTF-8 a moment ago: the round trip keeps every byte
        before = path.read_bytes().decode("utf-8")
        return before, edit.tick(before, entries)
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is no longer UTF-8 text;{again}") from None
    except InvalidInput as err:
        line, package_id = err.details["line"], err.details["package"]
        raise InvalidInput(
            f"{path}:{line} no longer holds the unticked entry of {package_id};{again}"
        ) from None


# --- paths -----------------------------------------------------------------------------------


def _git_root(doc: Path) -> Path | None:
    from coord.fast.git import toplevel

    return toplevel(doc.resolve().parent)
