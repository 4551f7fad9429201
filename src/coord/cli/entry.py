"""The `coord` command's first stop.

`coord guard PATH...` runs before every file edit an agent makes, so it skips argparse and the
HTTP client altogether: its few options are read here by hand. So does `coord hook CLIENT
EVENT`, which agents' clients run before every tool call. Anything unusual (``--help``, an
unknown option or client) takes the full parser in ``coord.cli.main``, which gives the same
answer with proper usage messages.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["guard"]:
        options = _guard_options(argv[1:])
        if options is not None:
            import os

            from coord.cli.guard_cmd import run_guard

            paths, agent, staged, fail_open, as_json = options
            agent = agent or os.environ.get("COORD_AGENT") or None
            verdict, _ = run_guard(
                paths, agent, staged=staged, fail_open=fail_open, as_json=as_json
            )
            if as_json:
                import json

                print(json.dumps(verdict))
            return 0
    hook = argv[:1] == ["hook"] and len(argv) == 3 and argv[1] in _HOOK_CLIENTS
    if hook and argv[2] and not argv[2].startswith("-"):
        from coord.hooks import run_hook

        return run_hook(argv[1], argv[2])
    from coord.cli.main import main as full

    return full(argv)


_HOOK_CLIENTS = ("claude", "codex", "gemini")


def _guard_options(args: list[str]) -> tuple[list[str], str | None, bool, bool, bool] | None:
    """(paths, agent, staged, fail_open, json), or None to let argparse handle it."""
    paths: list[str] = []
    agent: str | None = None
    flags = {"--staged": False, "--fail-open": False, "--json": False}
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            paths.extend(rest)
        elif arg in flags:
            flags[arg] = True
        elif arg == "--as":
            agent = next(rest, None)
            if agent is None:
                return None
        elif arg.startswith("--as="):
            agent = arg[len("--as=") :]
        elif arg.startswith("-"):
            return None
        else:
            paths.append(arg)
    return paths, agent, flags["--staged"], flags["--fail-open"], flags["--json"]
