"""The fast path hashes with the interpreter's builtin SHA-256 module, never hashlib's.

``hashlib`` loads OpenSSL (several ms of every CLI call); the builtin module is ``_sha256`` up
to Python 3.11 and ``_sha2`` from 3.12. A fallback that names only the old module silently pays
hashlib's cost on every newer Python.
"""

from __future__ import annotations

import subprocess
import sys


def test_the_fast_paths_sha256_comes_from_the_builtin_module() -> None:
    from coord.fast import daemon_proof, snapshots

    builtin = {"_sha256", "_sha2"}
    for module in (daemon_proof, snapshots):
        assert type(module.sha256()).__module__ in builtin | {"builtins"}, module
        assert module.sha256.__module__ in builtin, (module, module.sha256.__module__)


def test_importing_the_fast_hashers_loads_no_hashlib() -> None:
    code = (
        "import sys; import coord.fast.daemon_proof, coord.fast.snapshots; "
        "print('hashlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
