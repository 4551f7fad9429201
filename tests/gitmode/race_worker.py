"""A worker for the race tests: one spawned process, one clone, one `coord git` command.

Stdlib only at import time, so a spawned child starts fast. The worker prepares everything
(imports, working directory) before it waits on the barrier, so the commands start together.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from typing import Any


def run_after_barrier(results: Any, barrier: Any, clone: str, argv: list[str]) -> None:
    try:
        os.chdir(clone)
        from coord.cli.main import main

        out = io.StringIO()
        barrier.wait(60)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(argv)
        results.put((clone, code, json.loads(out.getvalue() or "null")))
    except BaseException as error:  # the test must hear of it, never hang on the queue
        results.put((clone, -1, {"crash": repr(error)}))
