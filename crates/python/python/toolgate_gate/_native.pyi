"""Type stubs for the Rust extension (crates/python/src/lib.rs)."""

from datetime import datetime
from os import PathLike
from typing import Any, Mapping, Optional, Union

RequestLike = Union["Request", Mapping[str, Any]]
Raw = Union[bytes, bytearray, memoryview]

class ContractProblem:
    """One problem with a contract: where it is and what to do."""

    file: str
    line: Optional[int]
    column: Optional[int]
    json_pointer: Optional[str]
    message: str
    fix: Optional[str]

class ContractError(Exception):
    """A contract that cannot be loaded or compiled."""

    errors: list[ContractProblem]

class Request:
    """The outstanding request a response is decided under."""

    request_id: str
    context: dict[str, Any]
    upstream_status: Optional[int]
    upstream: Optional[str]
    def __init__(
        self,
        request_id: str,
        context: Optional[Mapping[str, Any]] = None,
        upstream_status: Optional[int] = None,
        upstream: Optional[str] = None,
    ) -> None: ...

class Decision:
    """The gate's decision on one response."""

    @property
    def admitted(self) -> bool: ...
    @property
    def outcome(self) -> str:
        """`"admitted"`, `"admitted_failure"` or `"rejected"`."""
    @property
    def layer(self) -> Optional[str]: ...
    @property
    def rule(self) -> Optional[str]: ...
    @property
    def code(self) -> Optional[str]: ...
    @property
    def retryable(self) -> bool: ...
    @property
    def shape(self) -> Optional[str]: ...
    @property
    def agent_bytes(self) -> bytes:
        """Exactly the bytes the agent sees."""
    def agent_json(self) -> Any: ...
    @property
    def operator_text(self) -> Optional[str]: ...
    @property
    def operator_record(self) -> Optional[dict[str, Any]]: ...
    @property
    def audit_line(self) -> bytes: ...
    @property
    def audit_event(self) -> dict[str, Any]: ...

class RetryPolicy:
    """A contract's retry policy."""

    @property
    def max_attempts(self) -> int: ...
    @property
    def time_budget(self) -> float: ...
    @property
    def retryable_codes(self) -> list[str]: ...
    def should_retry(self, decision: Decision, attempt: int, elapsed: float) -> bool: ...
    def is_retryable(self, code: str) -> bool: ...

class Contract:
    """A compiled contract, shared freely across threads."""

    @staticmethod
    def load(
        root: Union[str, "PathLike[str]"], tool: str, version: Union[str, int, None] = None
    ) -> "Contract": ...
    @staticmethod
    def from_folder(folder: Union[str, "PathLike[str]"]) -> "Contract": ...
    @staticmethod
    def from_files(contract_yaml: str, schemas: Optional[Mapping[str, str]] = None) -> "Contract": ...
    @property
    def tool(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def direction(self) -> str: ...
    @property
    def retry_policy(self) -> RetryPolicy: ...
    def admit(self, raw: Raw, request: RequestLike, now: Optional[datetime] = None) -> Decision: ...

def gate_version() -> str: ...
