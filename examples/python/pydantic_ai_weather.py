"""pydantic-ai with a gated function tool (pip install "pydantic-ai-slim" toolgate-gate).

The model sees only what the `weather` contract promises: the projection, or the fixed failure.
Runs offline with a scripted model (pydantic-ai's FunctionModel) that asks for the weather in
each city given on the command line; pass --model openai:gpt-4o to ask a real one.

    python examples/python/pydantic_ai_weather.py Lisbon Porto Faro
"""

import sys
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolgate_gate import Contract, gate_tool

sys.path.insert(0, str(Path(__file__).parent))
import weather_api  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
contract = Contract.load(REPO / "tests/mcp", "weather")


@gate_tool(contract)
def weather(city: str) -> bytes:
    """The current weather in a city."""
    return weather_api.fetch(city)


def scripted(cities: list[str]) -> FunctionModel:
    """A model that calls `weather` for each city, then reports what the tool returned."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart("weather", {"city": city}) for city in cities])
        return ModelResponse(parts=[TextPart("\n".join(str(part.content) for part in returned))])

    return FunctionModel(respond)


def main(arguments: list[str]) -> str:
    model = None
    if arguments[:1] == ["--model"]:
        model, arguments = arguments[1], arguments[2:]
    cities = arguments or ["Lisbon"]
    agent = Agent(model or scripted(cities), tools=[weather])
    return agent.run_sync(f"What is the weather in {', '.join(cities)}?").output


if __name__ == "__main__":
    print(main(sys.argv[1:]))
