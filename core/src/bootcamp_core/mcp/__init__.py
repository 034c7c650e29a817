"""The Model Context Protocol: ``bootcamp mcp serve`` (:mod:`.server`: any MCP client plays a bootcamp's episodes).

Needs the ``mcp`` extra (``pip install "bootcamp-core[mcp]"``); nothing outside this package imports ``mcp``.
"""
