"""The tool server: bootcamp tools served over HTTP by workers behind a routing master.

A worker (:mod:`.worker`) holds tool instances; the master (:mod:`.master`) routes every call of an instance id to
the worker that holds it and sends a new instance to the least-loaded healthy worker serving its bootcamp;
:func:`.launch.serve` runs either, or both ("unified": a master and N worker processes). The HTTP API is documented
in ``docs/tool-server.md``; :mod:`bootcamp_core.serve.client` is its client.
"""

from bootcamp_core.serve.launch import ServeConfig, serve

__all__ = ["ServeConfig", "serve"]
