"""The toolgate gate: a tool's raw output reaches an agent only as the minimal object its
contract promises, rebuilt by projection, or as one fixed failure.

This is the production gate (Rust, through PyO3), byte-identical to the one the contract
harness tests. Give it the bytes the tool returned, never a parsed value: re-serializing would
hide duplicate keys and number spellings the gate checks.

    from toolgate_gate import Contract

    contract = Contract.load("repo", "job_status")                # compiled once, share it freely
    decision = contract.admit(response.content, {"request_id": "req-1", "context": {...}})
    decision.agent_bytes                                          # what the agent may see

In production, keep what the gate refused, so `toolgate reproduce` can decide it again exactly,
and try a contract bump on real traffic before enforcing it:

    retention = Retention("/var/lib/toolgate/evidence")          # or "s3://bucket/prefix"
    decision = contract.admit(raw, request, shadow=candidate, retain=retention)
    retention.close()                                             # at shutdown: writes the rest

Count every decision as the proxy and `toolgate serve` do, and publish the counts with your own
metrics library (or serve the Prometheus text as it is):

    metrics = Metrics()
    decision = contract.admit(raw, request, metrics=metrics)
    metrics.snapshot()                                            # [{"name", "labels", "value"}]
"""

from ._native import (
    Contract,
    ContractError,
    ContractProblem,
    Decision,
    Door,
    DoorError,
    Metrics,
    Request,
    Retention,
    RetentionError,
    RetryPolicy,
    fixed_failure,
    gate_version,
)
from .audit import AuditSink, CallbackAudit, JsonLinesAudit
from .wrappers import gate_tool

__all__ = [
    "AuditSink",
    "CallbackAudit",
    "Contract",
    "ContractError",
    "ContractProblem",
    "Decision",
    "Door",
    "DoorError",
    "JsonLinesAudit",
    "Metrics",
    "Request",
    "Retention",
    "RetentionError",
    "RetryPolicy",
    "fixed_failure",
    "gate_tool",
    "gate_version",
]
