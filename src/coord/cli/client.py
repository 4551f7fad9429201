"""How the CLI reaches the daemon: find it from ``.coord/daemon.json``, start it if needed.

Stdlib only (``http.client``): this runs in every ``coord`` command.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from coord import paths
from coord.errors import CoordError, DaemonUnavailable, error_from_dict

START_TIMEOUT_SECONDS = 20.0


class Client:
    def __init__(self, board_dir: Path, *, autostart: bool = True, timeout: float = 30.0) -> None:
        self.board_dir = board_dir
        self.autostart = autostart
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None
        self._token: str | None = None
        self._host = ""

    # --- calls -----------------------------------------------------------------------------

    def get(self, path: str, timeout: float | None = None) -> Any:
        return self.call("GET", path, timeout=timeout)

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, body)

    def call(self, method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
        """One request; raises the board's own error on a non-2xx answer."""
        status, payload = self._send(method, path, body, timeout)
        if status >= 400:
            if isinstance(payload, dict) and "error" in payload:
                raise error_from_dict(payload)
            raise CoordError(f"daemon answered {status}: {payload!r}")
        return payload

    def _send(self, method: str, path: str, body: Any, timeout: float | None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if method != "GET":
            headers["Authorization"] = f"Bearer {self._write_token()}"
        for attempt in (1, 2):
            conn = self._connection()
            conn.timeout = timeout or self.timeout
            try:
                conn.request(method, path, body=data, headers={"Host": self._host, **headers})
                response = conn.getresponse()
                raw = response.read()
                break
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                # The daemon went away (restart, crash): find or start it once more.
                self.close()
                if attempt == 2:
                    raise DaemonUnavailable(
                        "the coord daemon closed the connection; see .coord/daemon.log"
                    ) from None
            except TimeoutError:
                self.close()
                raise DaemonUnavailable(
                    f"the coord daemon did not answer {method} {path} in time"
                ) from None
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, raw.decode(errors="replace")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- finding the daemon ----------------------------------------------------------------

    def _write_token(self) -> str:
        if self._token is None:
            self._token = paths.read_token(self.board_dir)
        return self._token

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            url = self.daemon_url()
            if url is None:
                if not self.autostart:
                    raise DaemonUnavailable(
                        "no coord daemon is running: start one with `coord serve`"
                    )
                url = self._start_daemon()
            parts = urlsplit(url)
            self._host = parts.netloc
            conn = http.client.HTTPConnection(
                parts.hostname or "127.0.0.1", parts.port or 80, timeout=self.timeout
            )
            try:
                conn.connect()
            except OSError:
                if not self.autostart:
                    raise DaemonUnavailable(f"no coord daemon answers at {url}") from None
                url = self._start_daemon()
                parts = urlsplit(url)
                self._host = parts.netloc
                conn = http.client.HTTPConnection(
                    parts.hostname or "127.0.0.1", parts.port or 80, timeout=self.timeout
                )
            self._conn = conn
        return self._conn

    def daemon_url(self) -> str | None:
        """The running daemon's address, or None if there is none (stale records ignored)."""
        try:
            record = json.loads(paths.daemon_record_path(self.board_dir).read_text("utf-8"))
            pid, url = int(record["pid"]), str(record["url"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return url if _alive(pid) else None

    def _start_daemon(self) -> str:
        log = (self.board_dir / "daemon.log").open("ab")
        env = {**os.environ, "COORD_DIR": str(self.board_dir)}
        process = subprocess.Popen(
            [sys.executable, "-m", "coord", "serve", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            cwd=self.board_dir.parent,
            start_new_session=True,  # outlive this command; no terminal signals
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        exited_at: float | None = None
        while time.monotonic() < deadline:
            url = self.daemon_url()
            if url is not None and _accepts(url):
                return url
            # Ours may have lost the start race to another CLI's daemon (it exits at once):
            # give the winner a few seconds to write its record.
            if process.poll() is not None:
                exited_at = exited_at or time.monotonic()
                if time.monotonic() - exited_at > 5:
                    break
            time.sleep(0.02)
        raise DaemonUnavailable(
            "could not start the coord daemon; see " + str(self.board_dir / "daemon.log")
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _accepts(url: str) -> bool:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=1)
    try:
        conn.connect()
        return True
    except OSError:
        return False
    finally:
        conn.close()
