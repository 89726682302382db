"""Start the MCP server entry given as JSON (as `mnemon mcp install claude-code --print` writes
it) with the official MCP Python SDK, initialize, list the tools and remember something.
Run by tests/test_installed.py with the SDK's own interpreter (scripts/fetch-mcp-sdk.sh)."""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    entry = json.loads(sys.argv[1])
    params = StdioServerParameters(
        command=entry["command"], args=entry.get("args", []), env=entry.get("env", {"PATH": os.environ.get("PATH", "")})
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name.startswith("mnemon"), init.server_info
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"remember", "recall", "read_graph"} <= tools, tools
            res = await session.call_tool("remember", {"kind": "learning", "text": "installed from a wheel"})
            assert not res.is_error, res
    print("mcp ok")


asyncio.run(main())
