"""How both front doors talk over stdio: the frame writer, the JSON-RPC envelope rules, the one
stdin reader, and ``serve_stdio()`` that puts them together for a process an editor started.

Protocol-neutral (no pygls, no ACP SDK): the LSP door frames with ``Content-Length`` headers,
the ACP door with newlines, both over these pieces. It imports nothing of the server but the
protocol's error codes.
"""
