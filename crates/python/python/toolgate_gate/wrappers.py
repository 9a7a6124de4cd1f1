"""A decorator for agent frameworks' function tools: the tool's raw result goes through the
gate, and the agent receives only the agent bytes (the projection, or the fixed failure); the
operator record goes to a logger, the audit event to a sink.

    @tool                                     # LangChain, or any framework's tool decorator
    @gate_tool(Contract.load("repo", "weather"))
    def weather(city: str) -> bytes:
        return httpx.get(f"https://api.example/weather/{city}").content

The wrapped function must return the raw bytes (an HTTP body's `response.content`, a
subprocess's stdout as bytes); an `httpx`/`requests` response object is accepted and its
`.content` used. Its keyword arguments are the call's trusted context for the contract's binding
rules (what the agent asked about); `context=` adds the operator's values (membership lists,
lookup tables), which never come from the model.
"""

from __future__ import annotations

import functools
import inspect
import logging
import uuid
from typing import Any, Callable, Mapping, Optional

from ._native import Contract, Decision, Retention
from .audit import AuditSink

_log = logging.getLogger("toolgate_gate")


def gate_tool(
    contract: Contract,
    *,
    context: Optional[Mapping[str, Any]] = None,
    audit: Optional[AuditSink] = None,
    logger: Optional[logging.Logger] = None,
    request_id: Optional[Callable[[], str]] = None,
    retain: Optional[Retention] = None,
    shadow: Optional[Contract] = None,
    observe: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., str]]:
    """Gates a function tool's raw result through `contract`.

    The decorated function keeps its name, docstring and signature (frameworks build the
    tool's schema from them), but returns `str`: the agent bytes, decoded. Each call is decided
    under a fresh request id (`request_id()` if given), with the call's arguments and
    `context` as trusted context. A rejection is logged at WARNING with the operator record
    (never shown to the agent); every decision is recorded by `audit` if given.

    `retain`, `shadow` and `observe` are `Contract.admit`'s: keep what the gate refused for
    `toolgate reproduce`, decide each call with a candidate version too, or only observe
    (the agent gets the tool's bytes; refused in CI).
    """
    log = logger or _log
    operator_context = dict(context or {})
    new_id = request_id or (lambda: f"call-{uuid.uuid4().hex}")

    def decorate(function: Callable[..., Any]) -> Callable[..., str]:
        signature = inspect.signature(function)

        def decide(raw: Any, arguments: Mapping[str, Any]) -> str:
            raw = getattr(raw, "content", raw)  # an httpx or requests response
            call_context = {**{k: v for k, v in arguments.items() if _is_json(v)}, **operator_context}
            decision = contract.admit(
                raw,
                {"request_id": new_id(), "context": call_context},
                shadow=shadow,
                observe=observe,
                retain=retain,
            )
            _report(decision, log, audit, contract)
            return decision.agent_bytes.decode("utf-8")

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def gated_async(*args: Any, **kwargs: Any) -> str:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                return decide(await function(*args, **kwargs), bound.arguments)

            gated_async.__annotations__ = {**function.__annotations__, "return": str}
            return gated_async

        @functools.wraps(function)
        def gated(*args: Any, **kwargs: Any) -> str:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return decide(function(*args, **kwargs), bound.arguments)

        gated.__annotations__ = {**function.__annotations__, "return": str}
        # inspect.signature follows __wrapped__: say the result is the agent's str.
        gated.__signature__ = signature.replace(return_annotation=str)  # type: ignore[attr-defined]
        return gated

    return decorate


def _report(decision: Decision, log: logging.Logger, audit: Optional[AuditSink], contract: Contract) -> None:
    if not decision.admitted or decision.outcome == "rejected":
        log.warning(
            "toolgate: %s %s %s a result\n%s",
            contract.tool,
            contract.version,
            "refused" if decision.enforced else "would refuse (observed only, passed on)",
            decision.operator_text or "",
        )
    if decision.shadow_disagrees:
        log.info("toolgate: %s shadow %s decided otherwise: %s", contract.tool, decision.shadow["version"], decision.shadow)
    if audit is not None:
        audit.record(decision)


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False
