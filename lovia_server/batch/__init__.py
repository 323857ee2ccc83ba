"""Headless batches of agent tasks: a task file in, ``results.jsonl`` out, run in this
process or on a Ray cluster through :mod:`lovia.executor`.

It sits in ``lovia_server`` (not in the core) because it offers the editor host's built-in
coding agent and its price table, and binds each task's tree with ``lovia.workspace``.
"""
