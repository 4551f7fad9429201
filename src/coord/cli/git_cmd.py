"""`coord git ...`: the git-native protocol (PLACEHOLDER: being written)."""

from __future__ import annotations

import argparse

from coord.errors import InvalidInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.cli.main import Context, Result


def args_git(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["reserve", "release", "done", "status", "reap"])


def cmd_git(args: argparse.Namespace, ctx: Context) -> Result:
    raise InvalidInput("coord git is not built yet")
