"""Scripted JSON-RPC: ``kdd serve`` (framing, connections, auth) over the method table of :mod:`.methods`."""
