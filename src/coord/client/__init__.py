"""The client half of the protocol, written once for the CLI and the MCP face."""
