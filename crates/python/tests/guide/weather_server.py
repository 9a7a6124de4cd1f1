"""The weather MCP server the guide's snippets start behind `toolgate mcp-proxy` (FastMCP, stdio):
it answers as tests/mcp/contracts/weather promises, and the agent sees the gate's projection.
"""

from mcp.server.fastmcp import FastMCP

server = FastMCP("weather")


@server.tool()
def weather(city: str) -> dict:
    """The current weather in a city."""
    return {
        "city": city,
        "temperature_c": 21.5,
        "conditions": "clear",
    }


if __name__ == "__main__":
    server.run("stdio")
