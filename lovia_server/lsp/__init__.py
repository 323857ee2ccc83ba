"""The language-server front door: pygls handlers, the transport, the editor workspace."""
