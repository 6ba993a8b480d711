"""Shells for AI agents: the tools they call (`tools`) and the MCP server serving them."""
