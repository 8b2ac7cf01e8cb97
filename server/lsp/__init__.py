"""``kdd lsp``: the language server, a thin adapter from LSP to the engine (run in worker processes)."""
