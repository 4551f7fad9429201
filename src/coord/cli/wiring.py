"""`coord init --claude ...` and `coord uninstall`: wiring agents' clients to the board.

PLACEHOLDER: being written. For now init only creates the board.
"""

from __future__ import annotations

import argparse

from coord.cli import commands

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coord.cli.main import Context, Result


def args_init(p: argparse.ArgumentParser) -> None:
    pass


def cmd_init(args: argparse.Namespace, ctx: Context) -> Result:
    return commands.cmd_init(args, ctx)


def args_uninstall(p: argparse.ArgumentParser) -> None:
    pass


def cmd_uninstall(args: argparse.Namespace, ctx: Context) -> Result:
    return {"removed": []}, "nothing to remove"
