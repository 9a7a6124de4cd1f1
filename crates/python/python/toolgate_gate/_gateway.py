"""What the gateways' doors (`litellm`, `contextforge`) share: the settings a gateway's
configuration may give the door, read one way."""

from __future__ import annotations

from typing import Any

from ._native import Door

# The front's settings, as `toolgate mcp-proxy`'s flags of the same names.
DOOR_SETTINGS = ("context", "audit", "audit_key", "retain", "retain_admitted", "shadow", "enforce", "observe")


def open_door(contracts: Any, name: str, settings: dict[str, Any], where: str) -> Door:
    """The door a gateway's configuration names: `contracts` and `settings` (only DOOR_SETTINGS),
    `where` naming the configuration key in an error. Raises when it cannot be opened, so the
    gateway does not start without it."""
    if not contracts:
        raise ValueError(f"toolgate: set {where}contracts to the contracts' repository folder or bundle")
    settings = dict(settings)
    for key in ("shadow", "enforce"):
        if isinstance(settings.get(key), str):
            settings[key] = [settings[key]]
    return Door(contracts, name=name, **settings)
