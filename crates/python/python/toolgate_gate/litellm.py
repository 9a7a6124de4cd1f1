"""toolgate inside LiteLLM's proxy: a guardrail on the MCP path, deciding every tool call's
arguments and result with the same door as `toolgate mcp-proxy` (the same agent bytes, the same
audit line), so what a client receives is the result the contract built, or the fixed failure.

    guardrails:
      - guardrail_name: toolgate
        litellm_params:
          guardrail: toolgate_gate.litellm.ToolgateGuardrail
          mode: [pre_mcp_call, post_mcp_call]
          default_on: true
          contracts: /etc/toolgate/contracts       # a repository folder or a bundle
          context: /etc/toolgate/context.json      # optional, as `mcp-proxy --context`
          audit: /var/log/toolgate/audit.jsonl     # optional, as `--audit`

Why it replaces LiteLLM's MCP guardrail translation. LiteLLM hands an `apply_guardrail` guardrail
only the result's strings (its text blocks and the string values of `structuredContent`) and
writes back what it returns into those strings: a guardrail cannot remove a member, change a
number or drop a content block, so the upstream's `structuredContent` would reach the client
beside any projection. LiteLLM picks that translation from a registry of handlers by call type;
this guardrail puts a subclass of LiteLLM's own handler there, which hands *this* guardrail the
whole `CallToolResult` and the call's arguments (every other guardrail is served by LiteLLM's
handler unchanged). The door's result replaces the result in place, content, `structuredContent`
and `isError` together.

Fail closed:
  - A door that cannot be opened (a contract that does not compile, a missing context file)
    raises in the constructor: LiteLLM then refuses to start.
  - LiteLLM versions whose handler registry is not what this guardrail was built against make the
    constructor raise too: the guardrail never runs half-installed.
  - Anything that goes wrong while deciding answers the tool's fixed failure; an exception raised
    here reaches the client as `isError` with `Error: <message>`, and its message is always the
    fixed failure, never a validator's words.
  - A tool without a contract is hidden from `tools/list` and its calls are refused.
  - `async_post_mcp_tool_call_hook` is never used: LiteLLM swallows its exceptions.

What it cannot do: rewrite the `outputSchema` LiteLLM lists for a tool (no hook reaches it). A
client that checks `structuredContent` against an upstream's own output schema rejects a
correct projection; point that server's `url` at `toolgate mcp-proxy --listen`, which rewrites it
(the user guide, "Where your agents already run").
"""

from __future__ import annotations

from typing import Any

from litellm.integrations.custom_guardrail import CustomGuardrail
from litellm.llms import load_guardrail_translation_mappings
from litellm.proxy._experimental.mcp_server.guardrail_translation.handler import (
    MCPGuardrailTranslationHandler,
)
from litellm.types.utils import CallTypes

from ._gateway import DOOR_SETTINGS, open_door
from ._native import fixed_failure

__all__ = ["ToolgateGuardrail"]



class ToolgateGuardrail(CustomGuardrail):
    """The gate on LiteLLM's MCP path: see the module's documentation."""

    def __init__(self, contracts: str | None = None, **kwargs: Any) -> None:
        # The door's own settings; every other keyword is LiteLLM's, for CustomGuardrail.
        settings = {key: kwargs.pop(key) for key in DOOR_SETTINGS if kwargs.get(key) is not None}
        self.door = open_door(contracts, "litellm", settings, "litellm_params.")
        _install_translation()
        super().__init__(**kwargs)

    async def apply_guardrail(self, inputs, request_data, input_type, logging_obj=None):
        # Reached only if LiteLLM's registry no longer holds the gated handler (something replaced
        # it after start): nothing here can be decided from strings alone, so nothing passes.
        raise RuntimeError(fixed_failure("unknown", _call_id(request_data)))

    def gate_listed(self, data: dict[str, Any]) -> dict[str, Any]:
        """LiteLLM's catalog scan of one listed tool: a tool the door would not offer is hidden."""
        tool = str(data.get("mcp_tool_name") or data.get("name") or "")
        listed = self.door.decide_tools_list({"tools": [{"name": tool, "inputSchema": {"type": "object"}}]})
        if not listed or not listed.get("tools"):
            raise RuntimeError(f"toolgate: tool {tool!r} has no contract, so it is not offered")
        return data

    def gate_arguments(self, data: dict[str, Any]) -> dict[str, Any]:
        """A call's arguments, decided by the tool's argument contract."""
        tool = str(data.get("mcp_tool_name") or data.get("name") or "")
        request_id = _call_id(data)
        arguments = data.get("mcp_arguments") or data.get("arguments") or {}
        verdict, value = self.door.decide_arguments(tool, request_id, arguments)
        if verdict == "refused":
            raise RuntimeError(value)
        if verdict == "rebuilt":
            data["mcp_arguments"] = value
            data["modified_arguments"] = value
        return data

    def gate_result(self, response: Any, request_data: dict[str, Any]) -> Any:
        """A call's result, replaced in place by the door's."""
        call = request_data.get("mcp_tool_call_metadata") or {}
        tool = str(call.get("name") or "")
        request_id = _call_id(request_data)
        try:
            handed = response.model_dump(by_alias=True, exclude_none=True, mode="json")
            result, _agent = self.door.decide_result(tool, request_id, call.get("arguments") or {}, handed)
            _replace(response, result)
        except Exception as error:  # noqa: BLE001  # whatever failed, the client gets the fixed failure
            raise RuntimeError(fixed_failure(tool or "unknown", request_id)) from error
        return response


class _GatedCall(MCPGuardrailTranslationHandler):
    """LiteLLM's translation of a tool call, but for `ToolgateGuardrail`: handed the whole call."""

    async def process_input_messages(self, data, guardrail_to_apply, litellm_logging_obj=None):
        if isinstance(guardrail_to_apply, ToolgateGuardrail):
            return guardrail_to_apply.gate_arguments(data)
        return await super().process_input_messages(data, guardrail_to_apply, litellm_logging_obj)

    async def process_output_response(self, response, guardrail_to_apply, litellm_logging_obj=None,
                                      user_api_key_dict=None, request_data=None):
        if isinstance(guardrail_to_apply, ToolgateGuardrail):
            return guardrail_to_apply.gate_result(response, request_data or {})
        return await super().process_output_response(
            response, guardrail_to_apply, litellm_logging_obj, user_api_key_dict, request_data)


class _GatedCatalogScan(MCPGuardrailTranslationHandler):
    """LiteLLM's translation of its `tools/list` scan, but for `ToolgateGuardrail`: asks the door."""

    async def process_input_messages(self, data, guardrail_to_apply, litellm_logging_obj=None):
        if isinstance(guardrail_to_apply, ToolgateGuardrail):
            return guardrail_to_apply.gate_listed(data)
        return await super().process_input_messages(data, guardrail_to_apply, litellm_logging_obj)


def _install_translation() -> None:
    mappings = load_guardrail_translation_mappings()
    for call_type, gated in ((CallTypes.call_mcp_tool, _GatedCall), (CallTypes.list_mcp_tools, _GatedCatalogScan)):
        handler = mappings.get(call_type) if isinstance(mappings, dict) else None
        if not isinstance(handler, type) or not issubclass(handler, MCPGuardrailTranslationHandler):
            raise RuntimeError(
                f"toolgate: this LiteLLM's MCP guardrail translation for {call_type.value} is not the one "
                "toolgate_gate.litellm was built against (litellm 1.108): the gate would not see whole calls, "
                "so it refuses to start")
        mappings[call_type] = gated


def _replace(response: Any, result: dict[str, Any]) -> None:
    """`response`, a CallToolResult, made the door's result: in place, as LiteLLM's own handler
    masks (its logging payload holds the same object)."""
    rebuilt = type(response).model_validate(result)
    for field in type(response).model_fields:
        setattr(response, field, getattr(rebuilt, field))


def _call_id(data: dict[str, Any]) -> str:
    """LiteLLM's id of the call, the same before and after it: the decision's request id."""
    logging_obj = data.get("litellm_logging_obj")
    return str(getattr(logging_obj, "litellm_call_id", None) or data.get("litellm_call_id") or "0")

