"""lovia over the Agent Client Protocol (``lovia acp``): Zed, JetBrains, Neovim and every ACP
host drive the same supervisor, stores and ACL as the editor's language server."""
