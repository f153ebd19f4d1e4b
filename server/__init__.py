"""The MCP server: settings, the lifespan that opens the memory, transports and the CLI."""
