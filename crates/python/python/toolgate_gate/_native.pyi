"""Type stubs for the Rust extension (crates/python/src/lib.rs)."""

from datetime import datetime
from os import PathLike
from datetime import timedelta
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

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
        """Exactly the bytes the agent sees (observed only: the tool's bytes)."""
    def agent_json(self) -> Any: ...
    @property
    def gate_bytes(self) -> bytes:
        """The bytes the gate built, enforced or not."""
    @property
    def enforced(self) -> bool:
        """False when only observed (`admit(observe=True)`)."""
    @property
    def shadow(self) -> Optional[dict[str, Any]]:
        """What the shadow version decided: version, contract_digest, outcome, layer, code,
        agent_differs."""
    @property
    def shadow_disagrees(self) -> bool: ...
    @property
    def operator_text(self) -> Optional[str]: ...
    @property
    def operator_record(self) -> Optional[dict[str, Any]]: ...
    @property
    def audit_line(self) -> bytes: ...
    @property
    def audit_event(self) -> dict[str, Any]: ...

class RetentionError(Exception):
    """A retention store that cannot be used."""

class Retention:
    """Keeps what the gate refused (and a share of what it admitted) for `toolgate reproduce`."""

    def __init__(
        self,
        store: Union[str, "PathLike[str]"],
        *,
        admitted: Union[float, str, None] = None,
        budget: Union[int, str, None] = None,
        max_age: Union[float, timedelta, str, None] = None,
        max_records: Optional[int] = None,
        secret_keys: Sequence[str] = (),
        secret_key: Optional[bytes] = None,
        recipients: Sequence[str] = (),
        endpoint: Optional[str] = None,
    ) -> None: ...
    @property
    def store(self) -> str: ...
    @property
    def stats(self) -> dict[str, int]:
        """kept, dropped, failed, lost, evicted."""
    def flush(self, timeout: float = 10.0) -> bool: ...
    def close(self, timeout: float = 10.0) -> str: ...
    def __enter__(self) -> "Retention": ...
    def __exit__(self, *exception: object) -> bool: ...

class Metrics:
    """The metrics every toolgate front keeps: decisions by tool, version, direction, outcome,
    layer and code, and how long each took. Pass it to `Contract.admit(metrics=...)`."""

    def __init__(self) -> None: ...
    def snapshot(self) -> list[dict[str, Any]]:
        """Every sample: {"name": str, "labels": dict[str, str], "value": float}."""
    def exposition(self) -> str:
        """The Prometheus text exposition (version 0.0.4)."""
    def watch(self, retention: Retention) -> None:
        """Counts what `retention` keeps, drops and evicts."""
    def loaded(self, contract: "Contract") -> None:
        """Names `contract` in toolgate_contract_info."""

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
    def admit(
        self,
        raw: Raw,
        request: RequestLike,
        now: Optional[datetime] = None,
        *,
        shadow: Optional["Contract"] = None,
        observe: bool = False,
        retain: Optional[Retention] = None,
        metrics: Optional[Metrics] = None,
        tool_error: bool = False,
    ) -> Decision: ...

class DoorError(Exception):
    """A door that cannot be opened: contracts, context, audit log or retention store."""

class Door:
    """The gate inside a Python gateway that hands its plugins an MCP call already parsed
    (`toolgate_gate.litellm`, `toolgate_gate.contextforge`): the binary's door, so a call gets the
    same agent bytes and audit line as through `toolgate mcp-proxy`."""

    def __init__(
        self,
        contracts: Union[str, "PathLike[str]"],
        *,
        name: Optional[str] = None,
        context: Optional[Union[str, "PathLike[str]"]] = None,
        audit: Optional[Union[str, "PathLike[str]"]] = None,
        audit_key: Optional[Union[str, "PathLike[str]"]] = None,
        retain: Optional[str] = None,
        retain_admitted: Optional[str] = None,
        shadow: Sequence[str] = (),
        enforce: Sequence[str] = (),
        observe: bool = False,
        redact_values: bool = False,
    ) -> None: ...
    def decide_arguments(
        self, tool: str, request_id: str, arguments: Mapping[str, Any]
    ) -> Tuple[str, Any]: ...
    def decide_result(
        self, tool: str, request_id: str, arguments: Mapping[str, Any], result: Mapping[str, Any]
    ) -> Tuple[Dict[str, Any], Optional[str]]: ...
    def decide_tools_list(self, result: Mapping[str, Any]) -> Optional[Dict[str, Any]]: ...
    @property
    def observe(self) -> bool: ...
    def close(self, within: Optional[float] = None) -> None: ...

def fixed_failure(tool: str, request_id: str) -> str: ...
def gate_version() -> str: ...
