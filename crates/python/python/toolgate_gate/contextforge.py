"""toolgate inside IBM's ContextForge gateway (`mcp-contextforge-gateway`): a plugin on the tool
hooks, deciding every tool call's arguments and result with the same door as `toolgate mcp-proxy`
(the same agent bytes, the same audit line), so what a client receives is the result the contract
built, or the fixed failure.

    # plugins/config.yaml (PLUGINS_CONFIG_FILE), with PLUGINS_ENABLED=true and
    # PLUGINS_FAIL_ON_PLUGIN_ERROR=true in the gateway's environment
    plugins:
      - name: toolgate
        kind: toolgate_gate.contextforge.ToolgatePlugin
        hooks: [tool_pre_invoke, tool_post_invoke]
        mode: sequential
        on_error: fail
        priority: 1
        config:
          contracts: /etc/toolgate/contracts       # a repository folder or a bundle
          context: /etc/toolgate/context.json      # optional, as `mcp-proxy --context`
          audit: /var/log/toolgate/audit.jsonl     # optional, as `--audit`

What it is handed: `tool_pre_invoke` the arguments, parsed; `tool_post_invoke` the result, parsed
(ContextForge's `ToolResult`, duplicate keys already gone: the gate decides its `structuredContent`
as every door does) and not the arguments, which the plugin keeps from the call's pre hook. The
door's result replaces `content`, `structuredContent`, `isError` and `_meta` together.

Fail closed:
  - ContextForge skips a plugin whose constructor fails and serves results unguarded, unless the
    gateway runs with `PLUGINS_FAIL_ON_PLUGIN_ERROR=true` (the YAML's `fail_on_plugin_error` does
    not cover it): set it, and a contract that does not compile stops the gateway.
  - The hooks never raise: anything that goes wrong answers the tool's fixed failure (a result),
    or refuses the call with the fixed failure as the violation's description.
  - A tool without a contract is refused.

What it cannot do: rewrite the `outputSchema` ContextForge lists for a tool (no hook reaches
`tools/list`). A client that checks `structuredContent` against the upstream's own output schema
rejects a correct projection: set the tool's output schema to the one the door offers
(`Door.decide_tools_list`) through ContextForge's `PUT /tools/{id}` (the user guide, "Where your
agents already run").
"""

from __future__ import annotations

from typing import Any

from cpex.framework import Plugin, PluginConfig, PluginContext, PluginResult, PluginViolation
from cpex.framework.hooks.tools import (
    ToolPostInvokePayload,
    ToolPostInvokeResult,
    ToolPreInvokePayload,
    ToolPreInvokeResult,
)

from ._gateway import DOOR_SETTINGS, open_door
from ._native import fixed_failure

__all__ = ["ToolgatePlugin"]

# Where a call's arguments wait, in the plugin's own context, from its pre hook to its post hook.
_ARGUMENTS = "toolgate.arguments"


class ToolgatePlugin(Plugin):
    """The gate on ContextForge's tool hooks: see the module's documentation."""

    def __init__(self, config: PluginConfig) -> None:
        super().__init__(config)
        settings = dict(config.config or {})
        contracts = settings.pop("contracts", None)
        unknown = sorted(set(settings) - set(DOOR_SETTINGS))
        if unknown:
            raise ValueError(f"toolgate: unknown config key(s) {unknown}; known: contracts, {', '.join(DOOR_SETTINGS)}")
        self.door = open_door(contracts, "contextforge", settings, "the plugin's config.")

    async def tool_pre_invoke(self, payload: ToolPreInvokePayload, context: PluginContext) -> ToolPreInvokeResult:
        tool, request_id = _tool(payload.name, context), _request_id(context)
        arguments = payload.args or {}
        try:
            verdict, value = self.door.decide_arguments(tool, request_id, arguments)
        except Exception:  # noqa: BLE001  # whatever failed, the call is refused
            verdict, value = "refused", fixed_failure(tool, request_id)
        if verdict == "refused":
            return ToolPreInvokeResult(continue_processing=False, violation=PluginViolation(
                reason="refused by toolgate", description=value, code="TOOLGATE_REFUSED",
                details={}))
        if verdict == "rebuilt":
            context.state[_ARGUMENTS] = value
            return ToolPreInvokeResult(modified_payload=payload.model_copy(update={"args": value}))
        context.state[_ARGUMENTS] = arguments
        return ToolPreInvokeResult()

    async def tool_post_invoke(self, payload: ToolPostInvokePayload, context: PluginContext) -> ToolPostInvokeResult:
        tool, request_id = _tool(payload.name, context), _request_id(context)
        try:
            arguments = context.state.get(_ARGUMENTS, {})
            result, _agent = self.door.decide_result(tool, request_id, arguments, _wire(payload.result))
        except Exception:  # noqa: BLE001  # whatever failed, the client gets the fixed failure
            failure = fixed_failure(tool, request_id)
            result = {"content": [{"type": "text", "text": failure}], "isError": True}
        # The upstream's `_meta` goes with the rest of its result.
        result = {**result, "_meta": None}
        return ToolPostInvokeResult(modified_payload=payload.model_copy(update={"result": result}))


def _tool(name: str, context: PluginContext) -> str:
    """The tool's name in the contracts: the upstream's own, which ContextForge keeps as the
    tool's `original_name` (it lists the tool as `<gateway>-<name>`)."""
    tool = context.global_context.metadata.get("tool")
    return str(getattr(tool, "original_name", None) or name)


def _request_id(context: PluginContext) -> str:
    return str(context.global_context.request_id or "0")


def _wire(result: Any) -> Any:
    """The result as MCP writes it: ContextForge hands `ToolResult.model_dump(by_alias=True)`,
    which holds `null` for what MCP leaves out."""
    if not isinstance(result, dict):
        return result
    return {key: value for key, value in result.items() if value is not None}
