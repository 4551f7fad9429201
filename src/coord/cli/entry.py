"""The `coord` command's first stop.

`coord guard PATH...` runs before every file edit an agent makes, so it skips argparse and the
HTTP client altogether: its few options are read here by hand. So does `coord hook CLIENT
EVENT`, which agents' clients run before every tool call, and `coord next`, the call an agent
makes to get work, and `coord mcp`, which a client spawns per session and asks for its tools at
once: argparse (with the regular expressions and gettext it loads) costs more than
the rest of the claim. Anything unusual (``--help``, an unknown option or a bad value) takes the
full parser in ``coord.cli.main``, which gives the same answer with proper usage messages.
"""

from __future__ import annotations

import sys

from coord.fast.clients import HOOK_CLIENTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import SimpleNamespace


# what a shell reports for a program the reader stopped listening to (128 + SIGPIPE)
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    try:
        code = _run(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()  # here, not at exit, where a closed pipe would print a traceback
    except BrokenPipeError:
        # `coord log | head -1`: the reader has what it wanted. Say nothing (there is no one to
        # say it to) and end as a program killed by SIGPIPE would; what the command did to
        # the board before printing stays done.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE
    return code


def _run(argv: list[str]) -> int:
    if argv[:1] == ["guard"]:
        options = _guard_options(argv[1:])
        if options is not None:
            from coord.cli.guard_cmd import run_guard
            from coord.fast import identity

            paths, agent, staged, fail_open, as_json = options
            verdict, _ = run_guard(
                paths,
                agent or identity.of_command(),
                staged=staged,
                fail_open=fail_open,
                as_json=as_json,
            )
            if as_json:
                import json

                print(json.dumps(verdict))
            return 0
    hook = argv[:1] == ["hook"] and len(argv) == 3 and argv[1] in HOOK_CLIENTS
    if hook and argv[2] and not argv[2].startswith("-"):
        from coord.hooks import run_hook

        return run_hook(argv[1], argv[2])
    if argv[:1] == ["mcp"]:
        # a client spawns it per session and lists the tools at once: no argparse first
        agent = _mcp_agent(argv[1:])
        if agent is not None:
            from coord.mcp.stdio import serve_before_argparse

            code = serve_before_argparse(agent or None)
            if code is not None:
                return code
    if argv[:1] == ["next"]:
        args = next_options(argv[1:])
        if args is not None:
            from coord.cli.commands import cmd_next
            from coord.cli.context import execute

            return execute(cmd_next, args)  # type: ignore[arg-type]
    from coord.cli.main import main as full

    return full(argv)


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


def _mcp_agent(args: list[str]) -> str | None:
    """``coord mcp``'s ``--as NAME`` ("" without it), or None to let argparse handle it."""
    if not args:
        return ""
    if len(args) == 2 and args[0] == "--as" and args[1] and not args[1].startswith("-"):
        return args[1]
    if len(args) == 1 and args[0].startswith("--as=") and len(args[0]) > len("--as="):
        return args[0][len("--as=") :]
    return None


def next_options(args: list[str]) -> SimpleNamespace | None:
    """``coord next``'s options as argparse would give them (``coord.cli.parser.args_next``),
    or None to let argparse handle them: anything it would refuse or explain goes there."""
    from types import SimpleNamespace

    from coord.cli import argtypes

    found: dict[str, object] = {
        "command": "next",
        "kind": None,
        "label": None,
        "lease": None,
        "count": None,
    }
    valued: dict[str, tuple[str, Callable[[str], object]]] = {
        "--as": ("agent", str),
        "--kind": ("kind", _kind),
        "--label": ("label", str),
        "--lease": ("lease", argtypes.seconds),
        "--count": ("count", argtypes.count),
    }
    rest = iter(args)
    for arg in rest:
        name, equals, value = arg.partition("=")
        if arg == "--json":
            found["json"] = True
        elif name in valued:
            if not equals:
                value = next(rest, "")
            if not value or value.startswith("-"):
                return None  # argparse says what is missing
            dest, convert = valued[name]
            try:
                found[dest] = convert(value)
            except Exception:
                return None  # argparse says what is wrong with it
        else:
            return None
    return SimpleNamespace(**found)


def _kind(text: str) -> str:
    from coord.limits import KINDS

    if text not in KINDS:
        raise ValueError(text)
    return text
