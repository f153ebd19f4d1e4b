"""The MCP tools, one module each: typed inputs, typed structured outputs, calls into the
store. No Cypher here."""
