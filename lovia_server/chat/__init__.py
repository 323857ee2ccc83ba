"""``lovia chat``: the terminal client (a client of the server, not part of it)."""
