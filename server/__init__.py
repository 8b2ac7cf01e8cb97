"""The kdd daemon: command line, LSP and JSON-RPC servers over ``kdd.core``."""
import kdd.core  # noqa: F401,E402 - its import routes the dataclasses' generated methods through a table
