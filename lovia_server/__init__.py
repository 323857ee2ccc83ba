"""lovia_server: a language-server host that runs lovia agents for editors."""
