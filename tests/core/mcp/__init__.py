"""Soul's MCP client in the core, against real MCP servers."""
