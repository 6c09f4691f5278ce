"""Errors the language server turns into one message for the user (kept apart so importing them is cheap)."""


class CommandError(ValueError):
    """Bad command arguments or a buffer that cannot be used; the message is shown to the user."""


class ModelServerError(RuntimeError):
    """The model server could not be used; the message names the URL and what to do."""
