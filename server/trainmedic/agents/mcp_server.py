"""`trainmedic mcp`: the agents' tools over the Model Context Protocol, on stdin/stdout.

A thin shell over `tools`, on the official SDK's low-level server, so that each tool's input
schema and description are written out as the model reads them. A call runs in a worker
thread, so the server keeps answering while a large log is read; the answer is the report as
text and the JSON as structured content, and a bad argument is an error result the model can
act on, never a crash.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from trainmedic import __version__
from trainmedic.agents.tools import TOOLS, Rules, Tool, ToolInputError
from trainmedic.catalogue.rules import Catalogue
from trainmedic.matching.choice import matcher_for

logger = logging.getLogger(__name__)

WORKERS = 2  # calls diagnosed at once; more wait their turn, so memory stays that of two

INSTRUCTIONS = (
    "trainmedic diagnoses failed ML training runs on this machine. When a training job "
    "failed, call diagnose with its output (text) or its log files (paths) first; it names "
    "the root cause, the rank that failed first, the fix and a command that verifies it. Call "
    "check on the training scripts and configs before a run or when the diagnosis points at "
    "the code, and explain with a rule_id for the full story. Nothing leaves this machine.")

# Every tool only reads local files and the bundled catalogue.
READ_ONLY = types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                  idempotent_hint=True, open_world_hint=False)


def listed(tool: Tool) -> types.Tool:
    return types.Tool(name=tool.name, title=tool.title, description=tool.description,
                      input_schema=tool.input_schema, output_schema=tool.output_schema,
                      annotations=READ_ONLY)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                is_error=True)


def create_server(catalogue: Catalogue) -> Server[Any]:
    """A server answering with `catalogue`; each test or connection builds its own."""
    rules = Rules(catalogue, matcher_for(catalogue))
    tools = {tool.name: tool for tool in TOOLS}
    limiter = anyio.CapacityLimiter(WORKERS)

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[listed(tool) for tool in TOOLS])

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            return _error(f"no tool {params.name!r}; the tools are {', '.join(tools)}")
        try:
            answer = await anyio.to_thread.run_sync(tool.run, rules, params.arguments or {},
                                                    limiter=limiter)
        except ToolInputError as error:
            logger.info("%s refused its arguments: %s", tool.name, error)
            return _error(str(error))
        except Exception as error:
            logger.exception("%s failed", tool.name)
            return _error(f"trainmedic failed on this input ({type(error).__name__}: {error}); "
                          "this is a bug in trainmedic, not in the arguments")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=answer.report)],
            structured_content=answer.data)

    return Server("trainmedic", version=__version__, title="trainmedic",
                  description="Diagnose failed ML training runs from their logs, locally.",
                  instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


def serve(catalogue: Catalogue) -> int:
    """Serve one client on stdin/stdout until it closes them."""
    server = create_server(catalogue)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
    return 0
