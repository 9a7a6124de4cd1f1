"""Audit sinks: every decision's audit event, one JSON line each, as the Rust gate writes it."""

from __future__ import annotations

import os
import threading
from typing import Callable, Protocol, Union

from ._native import Decision


class AuditSink(Protocol):
    """Anything that records a decision's audit event."""

    def record(self, decision: Decision) -> None: ...


class JsonLinesAudit:
    """Appends each decision's audit line to a file (created if missing), one write per line,
    safe to share across threads."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self._lock = threading.Lock()
        # Unbuffered append: each line lands whole, in one write, even across processes.
        self._file = open(path, "ab", buffering=0)

    def record(self, decision: Decision) -> None:
        line = decision.audit_line
        with self._lock:
            self._file.write(line)

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def __enter__(self) -> "JsonLinesAudit":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class CallbackAudit:
    """Hands each decision's audit event (a dict) to a callable: a logger, a queue, a metrics
    client."""

    def __init__(self, callback: Callable[[dict], None]) -> None:
        self._callback = callback

    def record(self, decision: Decision) -> None:
        self._callback(decision.audit_event)
