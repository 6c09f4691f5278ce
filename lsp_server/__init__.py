"""The tritonize language server: audit diagnostics as you type, and quick fixes from the audit's fixes."""
