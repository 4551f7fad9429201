"""Judging the evidence of checks that must pass before an item is done.

The commands run where the agent works (``coord done`` runs them in its own working tree, often
a separate git worktree), so the evidence travels with ``done`` to the core, which judges it:
every check of the item needs a run that exited 0, or the holder gives a reason to skip them.
The evidence is kept on the item either way, where everyone sees it (``coord show``).
"""

from __future__ import annotations

from typing import Any

from coord import model
from coord.errors import ChecksFailed, ChecksRequired, InvalidInput, TooLarge
from coord.model import Item
from coord.times import iso

MAX_RUNS = 50
RUN_FIELDS = {"command", "exit_code", "duration_s", "head", "output_tail"}


def check_runs(value: Any) -> list[dict[str, Any]] | None:
    """Evidence as sent with ``done``: a list of runs, each with its command and exit code."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidInput("evidence must be a list of check runs", field="evidence")
    if len(value) > MAX_RUNS:
        raise TooLarge(f"{len(value)} check runs; the limit is {MAX_RUNS}", field="evidence")
    runs = []
    for entry in value:
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise InvalidInput(
                "each check run needs a command (string) and an exit_code (integer)",
                field="evidence",
            )
        code = entry.get("exit_code")
        if isinstance(code, bool) or not isinstance(code, int):
            raise InvalidInput(
                f"check run {entry['command']!r}: exit_code must be an integer", field="evidence"
            )
        unknown = sorted(set(entry) - RUN_FIELDS)
        if unknown:
            raise InvalidInput(
                f"check run: unknown field {', '.join(unknown)}; known fields are "
                f"{', '.join(sorted(RUN_FIELDS))}",
                field="evidence",
            )
        output = entry.get("output_tail")
        if output is not None and not isinstance(output, str):
            raise InvalidInput("output_tail must be a string", field="evidence")
        head = entry.get("head")
        if head is not None and not isinstance(head, str):
            raise InvalidInput("head must be a commit id (string)", field="evidence")
        took = entry.get("duration_s")
        if took is not None and (
            isinstance(took, bool) or not isinstance(took, int | float) or not 0 <= took < 1e9
        ):
            raise InvalidInput("duration_s must be a number of seconds", field="evidence")
        runs.append({**entry, "output_tail": (output or "")[-model.MAX_EVIDENCE_OUTPUT :]})
    return runs


def judge(
    item: Item, runs: list[dict[str, Any]] | None, skip_reason: str | None, agent: str, now: float
) -> tuple[dict[str, Any] | None, ChecksFailed | ChecksRequired | None]:
    """(evidence to record, the refusal if the item may not close)."""
    if skip_reason is not None:
        return {"skipped": skip_reason, "by": agent, "at": iso(now), "runs": runs or []}, None
    if not item.checks:
        record = {"passed": True, "by": agent, "at": iso(now), "runs": runs} if runs else None
        return record, None
    if runs is None:
        listed = ", ".join(f"`{c}`" for c in item.checks)
        return None, ChecksRequired(
            f"item {item.ref} has checks ({listed}): {ChecksRequired.advice_in_fields}",
            id=item.id,
            checks=list(item.checks),
        )
    last = {r["command"]: r for r in runs}
    failed = [c for c in item.checks if c in last and last[c]["exit_code"] != 0]
    missing = [c for c in item.checks if c not in last]
    passed = not failed and not missing
    record = {"passed": passed, "by": agent, "at": iso(now), "runs": runs}
    if passed:
        return record, None
    parts = [f"`{c}` exited {last[c]['exit_code']}" for c in failed]
    parts += [f"`{c}` did not run" for c in missing]
    return record, ChecksFailed(
        f"item {item.ref} stays claimed: {'; '.join(parts)}. {ChecksFailed.advice_in_fields}",
        id=item.id,
        failed=failed,
        missing=missing,
    )
