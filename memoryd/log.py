"""structlog set-up: readable on a TTY, logfmt with `<N>` priority under journald,
JSON lines otherwise. Tracebacks never render frame locals (they would copy
memory text into the log)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog

_SYSLOG_PRIORITY = {"critical": 2, "error": 3, "warning": 4, "info": 6, "debug": 7}


def _under_journald() -> bool:
    stream = os.environ.get("JOURNAL_STREAM", "")
    try:
        dev, ino = (int(x) for x in stream.split(":"))
        st = os.fstat(sys.stderr.fileno())
    except (ValueError, OSError):
        return False
    return (st.st_dev, st.st_ino) == (dev, ino)


def _journal_prefix(_: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    event["_prefix"] = f"<{_SYSLOG_PRIORITY.get(method, 6)}>"
    return event


class _PrefixedLogfmt:
    def __init__(self) -> None:
        self._render = structlog.processors.LogfmtRenderer(key_order=["event"])

    def __call__(self, logger: Any, method: str, event: dict[str, Any]) -> str:
        prefix = event.pop("_prefix", "")
        return str(prefix) + str(self._render(logger, method, event))


_CONFIGURED = ["info", "auto"]  # as last configured: a child process logs the same way


def configured() -> tuple[str, str]:
    """(level, format) of the last `configure`."""
    return _CONFIGURED[0], _CONFIGURED[1]


def configure(level: str = "info", fmt: str = "auto") -> None:
    _CONFIGURED[:] = [level, fmt]
    if fmt == "auto":
        if _under_journald():
            fmt = "journal"
        elif sys.stderr.isatty():
            fmt = "console"
        else:
            fmt = "json"
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
    ]
    renderer: Any
    if fmt == "console":
        shared.append(structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=False))
        renderer = structlog.dev.ConsoleRenderer(
            exception_formatter=structlog.dev.plain_traceback)
    elif fmt == "journal":
        shared += [structlog.processors.format_exc_info, _journal_prefix]
        renderer = _PrefixedLogfmt()
    else:
        shared += [
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)),
        ]
        renderer = structlog.processors.JSONRenderer(default=str)
    numeric = logging.getLevelName(level.upper())
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processor=renderer, foreign_pre_chain=shared))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for noisy in ("watchfiles", "chromadb", "httpx", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
