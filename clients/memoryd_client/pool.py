"""ClientPool: blocking clients shared by many threads (an HTTP server's handlers).

Each call takes an idle connection (or opens one), makes the call and gives the
connection back; one that failed is closed instead. Connections open lazily, so a
pool can exist before the daemon runs.
"""

from __future__ import annotations

import os
import queue
from typing import Any

from memoryd_client.sync import Client
from memoryd_client.wire import RpcFailure


class ClientPool:
    def __init__(self, socket_path: str | os.PathLike[str], timeout: float | None = 120.0,
                 **options: Any) -> None:
        self.socket_path = socket_path
        self._options = {"timeout": timeout, "retries": 0, **options}
        self._idle: queue.SimpleQueue[Client] = queue.SimpleQueue()

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """As Client.call; DaemonUnavailable (or OSError) when the daemon is not there."""
        try:
            client = self._idle.get_nowait()
        except queue.Empty:
            client = Client(self.socket_path, **self._options)
        try:
            result = client.call(method, params)
        except RpcFailure:
            self._idle.put(client)  # an answer: the connection is fine
            raise
        except BaseException:
            client.close()
            raise
        self._idle.put(client)
        return result

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
