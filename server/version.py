"""kdd's version, as the installed distribution states it: ``kdd --version`` and the language server's
``serverInfo`` (apart from the command line so the servers need not import it)."""


def kdd_version() -> str:
    """The installed distribution's version (``0+unknown`` running from a source tree without install)."""
    # importlib.metadata is imported here, not at start-up: it costs more than some commands.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kdd")
    except PackageNotFoundError:
        return "0+unknown"
