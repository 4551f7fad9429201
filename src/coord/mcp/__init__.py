"""coord's MCP face: the same board for agents that speak the Model Context Protocol."""
