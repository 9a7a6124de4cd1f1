"""The OpenAI Agents SDK with a gated function tool (pip install openai-agents toolgate-gate).

`function_tool` builds the tool from the gated function: the model receives only what the
`weather` contract promises. With OPENAI_API_KEY set, an agent answers the question; without,
the tool is invoked as the SDK invokes it for a model's call, and its output printed.

    python examples/python/openai_agents_weather.py Lisbon Porto Faro
"""

import asyncio
import json
import os
import sys
from pathlib import Path

from agents import Agent, Runner, function_tool
from agents.tool_context import ToolContext

from toolgate_gate import Contract, gate_tool

sys.path.insert(0, str(Path(__file__).parent))
import weather_api  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
contract = Contract.load(REPO / "tests/mcp", "weather")


@function_tool
@gate_tool(contract)
def weather(city: str) -> bytes:
    """The current weather in a city."""
    return weather_api.fetch(city)


async def main(cities: list[str]) -> str:
    if os.environ.get("OPENAI_API_KEY"):
        agent = Agent(name="forecaster", instructions="Answer from the weather tool only.", tools=[weather])
        return (await Runner.run(agent, f"What is the weather in {', '.join(cities)}?")).final_output
    outputs = []
    for n, city in enumerate(cities):
        arguments = json.dumps({"city": city})
        context = ToolContext(context=None, tool_name="weather", tool_call_id=f"call-{n}", tool_arguments=arguments)
        outputs.append(str(await weather.on_invoke_tool(context, arguments)))
    return "\n".join(outputs)


if __name__ == "__main__":
    print(asyncio.run(main(sys.argv[1:] or ["Lisbon"])))
