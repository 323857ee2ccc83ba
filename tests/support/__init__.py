"""Test support: scriptable fake vendor servers (``fake_server``, ``fake_openai``, ...)."""
