"""The kdd daemon: command line, LSP and JSON-RPC servers over ``kdd.core``."""
