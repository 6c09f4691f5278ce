"""Cancellable work-done progress: the client's cancel button (and `$/cancelRequest`) cancels the command's task.

pygls only cancels a future it keeps per token, so each command registers a uuid token and ties that future
to its own asyncio task. Without client support for progress, reports are dropped quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

from lsprotocol import types

from lsp_server.session import OnProgress, Session


@contextlib.asynccontextmanager
async def work_done(session: Session, title: str) -> AsyncIterator[OnProgress]:
    """Begin a progress bar titled `title`; yields `on_progress(message, percentage)`; ends it however work ends."""
    if not session.client.work_done_progress:
        yield lambda message, percentage=None: None
        return
    token = str(uuid.uuid4())
    progress = session.server.work_done_progress
    await progress.create_async(token)
    task = asyncio.current_task()
    progress.tokens[token].add_done_callback(lambda future: future.cancelled() and task.cancel())
    progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))  # no percentage until known
    last = ["done"]

    def on_progress(message: str, percentage: int | None = None) -> None:
        last[0] = message
        progress.report(token, types.WorkDoneProgressReport(message=message, percentage=percentage))

    try:
        yield on_progress
    except asyncio.CancelledError:
        last[0] = "cancelled"
        raise
    finally:
        progress.end(token, types.WorkDoneProgressEnd(message=last[0]))
        progress.tokens.pop(token, None)
