"""Errors the language server turns into one message for the user (kept apart so importing them is cheap)."""


class ModelServerError(RuntimeError):
    """The model server could not be used; the message names the URL and what to do."""
