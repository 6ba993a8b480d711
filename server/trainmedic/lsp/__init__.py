"""The language server: thin LSP shells over the same core as the CLI (`trainmedic lsp`)."""
