"""The one host core both front doors share: stores, the run supervisor, agents, MCP,
settings. It knows no wire format and imports neither ``lsp`` nor ``acp``."""
