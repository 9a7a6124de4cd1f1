"""What the doors' tests share: the binary under test, and the repository every door serves
(the MCP tests' contracts, with an argument contract for the weather tool)."""

import json
import os
import pathlib
import shutil

import pytest

TOOLGATE = os.environ["TOOLGATE_BIN"]
HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]

ARGUMENTS_CONTRACT = """tool: weather.arguments
version: 1
direction: action
description: The city a weather call asks about, one the operator serves.
limits: { max_bytes: 1024, max_depth: 2 }
shape:
  schema: arguments.schema.json
  fields:
    - { name: city, from: /city }
rules:
  - name: served_city
    membership: { field: city, context: cities }
    retryable: false
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """The MCP tests' contracts, with an argument contract for the weather tool."""
    root = tmp_path_factory.mktemp("doors") / "repo"
    shutil.copytree(ROOT / "tests/mcp/contracts", root / "contracts")
    folder = root / "contracts/weather.arguments/v1"
    folder.mkdir(parents=True)
    (folder / "contract.yaml").write_text(ARGUMENTS_CONTRACT)
    (folder / "arguments.schema.json").write_text(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 60}},
        "required": ["city"],
    }))
    (root / "context.json").write_text(json.dumps({"weather.arguments": {"cities": ["Oslo", "Lisbon"]}}))
    return root
