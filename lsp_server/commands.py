"""The workspace commands behind the code actions: convert, apply a proposal, verify.

Each returns a small JSON result (`status` plus details) so editors and tests can act on it, and tells the
user the outcome in exactly one message. Work runs under cancellable progress; cancelling closes the model
server request, which stops the conversion there too.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_server import placement, task_source
from lsp_server.progress import work_done

if TYPE_CHECKING:
    from lsp_server.server import TritonizeServer

CONVERT = "tritonize.convert"
APPLY = "tritonize.applyProposal"
VERIFY = "tritonize.verify"
MAX_PROPOSALS = 8


class CommandError(ValueError):
    """Bad command arguments or a buffer that cannot be used; the message is shown to the user."""


async def convert(ls: TritonizeServer, args: dict[str, Any]) -> dict[str, Any]:
    """Convert the definition at `args["line"]` of `args["uri"]`; apply it or, with `preview`, propose it."""
    uri, line = _uri(args), _line(args)
    document = ls.workspace.get_text_document(uri)
    tree = ls.tree(uri)
    if tree is None:
        raise CommandError(f"{_name(uri)} does not parse; fix the syntax error first")
    target = task_source.target_at(tree, line + 1)
    if target is None:
        raise CommandError("put the cursor inside a top-level function or an nn.Module class with forward()")
    task = task_source.build_task(document.source, tree, target)
    settings = await ls.settings_for(uri)
    body = {
        "task": task,
        "task_name": _identifier(target.name),
        "backend": settings.backend,
        "model": settings.model,
        "samples": settings.samples,
        "rounds": settings.rounds,
        "trials": settings.trials,
    }
    async with (
        work_done(ls, f"Converting {target.name} to Triton") as report,
        await ls.model_client(settings, report) as client,
    ):
        done, failures = await _stream(client.convert(body), report, settings.samples * settings.rounds)
    if done is None or done.get("best") is None:
        reason = failures[-1] if failures else (done or {}).get("stopped", "the stream ended early")
        ls.tell(f"tritonize: no correct Triton kernel for {target.name} ({reason})", types.MessageType.Warning)
        return {"status": "not_correct", "message": reason, "candidates": (done or {}).get("candidates", 0)}
    report_dict = done["report"]
    header = placement.report_comment(target, _name(uri), report_dict, settings.backend)
    summary = header.splitlines()[1].lstrip("# ").strip()
    proposal = _place(ls, uri, target, header, done["best"]["source"], settings.placement, summary)
    result = {"report": report_dict, "source": done["best"]["source"], "summary": summary}
    if args.get("preview"):
        key = str(uuid.uuid4())
        ls.proposals[key] = proposal
        while len(ls.proposals) > MAX_PROPOSALS:  # previews that were discarded without a word
            ls.proposals.pop(next(iter(ls.proposals)))
        preview = {
            "uri": proposal.uri,
            "new_file": proposal.new_file,
            "before": proposal.before,
            "after": proposal.text,
        }
        return {"status": "proposed", "proposal": key, "preview": preview, **result}
    return {**await apply(ls, proposal), **result}


async def apply_proposal(ls: TritonizeServer, args: dict[str, Any]) -> dict[str, Any]:
    key = args.get("proposal") if isinstance(args, dict) else None
    proposal = ls.proposals.pop(key, None) if isinstance(key, str) else None
    if proposal is None:
        raise CommandError("no such proposal (it was applied already, or the server restarted); convert again")
    return await apply(ls, proposal)


async def apply(ls: TritonizeServer, proposal: placement.Proposal) -> dict[str, Any]:
    """Put the kernel in place; a new file the client cannot create is written here, never over another.

    If the document changed since the proposal was made (typing during a conversion), the target is found
    again by name in the current text, so the kernel lands where it belongs and nothing typed is lost.
    """
    if not proposal.new_file and ls.workspace.get_text_document(proposal.uri).version != proposal.version:
        proposal = proposal.redo()
    edit = placement.workspace_edit(proposal, ls.client_capabilities)
    if edit is None:
        try:
            with open(proposal.path, "x", encoding="utf-8") as handle:
                handle.write(proposal.text)
        except OSError as exc:
            raise CommandError(f"cannot write {proposal.path}: {exc.strerror}") from exc
    else:
        outcome = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label="tritonize: Convert to Triton")
        )
        if not outcome.applied:
            ls.tell(f"tritonize: kernel not applied ({outcome.failure_reason or 'declined'})", types.MessageType.Info)
            return {"status": "declined", "uri": proposal.uri}
    if proposal.new_file:
        await ls.show(proposal.uri)
    ls.tell(f"tritonize: {proposal.summary}", types.MessageType.Info)
    return {"status": "applied", "uri": proposal.uri}


async def verify(ls: TritonizeServer, args: dict[str, Any]) -> dict[str, Any]:
    """Verify the ModelNew in `args["uri"]` against the task its `# tritonize-task:` line (or name) points to."""
    uri = _uri(args)
    document = ls.workspace.get_text_document(uri)
    reference = task_reference(document.source, to_fs_path(uri) or "")
    if reference is None:
        raise CommandError(f"{_name(uri)} names no task: add a line `{placement.TASK_MARKER} file.py::Model`")
    task_path, name = reference
    task_text = ls.text_of(task_path)
    tree = task_source.parse(task_text)
    target = task_source.target_named(tree, name)
    if target is None:
        raise CommandError(f"{Path(task_path).name} has no top-level {name} to verify against")
    task = task_source.build_task(task_text, tree, target)
    settings = await ls.settings_for(uri)
    async with (
        work_done(ls, f"Verifying {_name(uri)} against {name}") as report,
        await ls.model_client(settings, report) as client,
    ):
        report("running the candidate and the task in the sandbox", None)
        result = await client.verify(task, document.source, trials=settings.trials)
    verdict = result.get("verdict")
    kind = types.MessageType.Info if verdict == "correct" and result.get("reward", 0) > 0 else types.MessageType.Warning
    ls.tell(f"tritonize: {_name(uri)} is {verdict} against {name}: {_describe(result)}", kind)
    return {"status": "verified", "report": result}


def _place(
    ls: TritonizeServer, uri: str, target, header: str, kernel: str, where: str, summary: str
) -> placement.Proposal:
    """The proposal against the document as it is now (a new file when the target is gone from it)."""
    document = ls.workspace.get_text_document(uri)
    current = task_source.target_named(ls.tree(uri), target.name)
    if current is None:
        where, current = "new_file", target
    proposal = placement.propose(
        uri, document.version, document.lines, ls.workspace.position_codec, current, header, kernel, where, summary
    )
    proposal.redo = lambda: _place(ls, uri, target, header, kernel, where, summary)
    return proposal


def task_reference(source: str, path: str) -> tuple[str, str] | None:
    """(task file, definition) from a `# tritonize-task: file.py::Name` line, else `x_triton.py` → `x.py::Model`."""
    for line in source.splitlines()[:40]:
        if line.startswith(placement.TASK_MARKER):
            file, _, name = line[len(placement.TASK_MARKER) :].strip().partition("::")
            return str(Path(path).parent / file), name or task_source.WRAPPER_CLASS
    stem = Path(path).stem
    if "_triton" in stem:
        sibling = Path(path).with_name(stem[: stem.rindex("_triton")] + ".py")
        if sibling.is_file():
            return str(sibling), task_source.WRAPPER_CLASS
    return None


async def _stream(events, report, expected: int) -> tuple[dict | None, list[str]]:
    done, failures, seen = None, [], 0
    async for event in events:
        kind = event.get("event")
        if kind == "candidate":
            seen += 1
        message = describe(event)
        if message:
            report(message, min(99, 100 * seen // max(expected, 1)))
        if kind == "error":
            failures.append(event.get("message", "error"))
        if kind == "done":
            done = event
    return done, failures


def describe(event: dict[str, Any]) -> str | None:
    """One progress line per model-server event ("round 1: candidate 3/8 incorrect (max err 0.2)")."""
    kind = event.get("event")
    if kind == "accepted":
        return f"{event.get('backend')} backend on {event.get('device')}"
    if kind == "round":
        return f"round {event['round']}: generating up to {event['samples']} candidates"
    if kind == "candidate":
        details = []
        if event.get("max_abs_error") is not None:
            details.append(f"max err {event['max_abs_error']:.2g}")
        if event.get("speedup_vs_eager") is not None:
            details.append(f"{event['speedup_vs_eager']:.2f}x eager")
        suffix = f" ({', '.join(details)})" if details else ""
        return f"round {event['round']}: candidate {event['index']}/{event['of']} {event['verdict']}{suffix}"
    if kind in ("note", "error", "queued"):
        return event.get("message")
    if kind == "done":
        return f"done: {event.get('stopped')}"
    return None


def _describe(report: dict[str, Any]) -> str:
    parts = [f"max abs error {report['max_abs_error']:.2g}" if report.get("max_abs_error") is not None else None]
    timing = report.get("timing") or {}
    if timing.get("speedup_vs_eager") is not None:
        parts.append(f"{timing['speedup_vs_eager']:.2f}x vs eager")
    if timing.get("speedup_vs_compile") is not None:
        parts.append(f"{timing['speedup_vs_compile']:.2f}x vs torch.compile")
    if report.get("message"):
        parts.append(str(report["message"]))
    return "; ".join(p for p in parts if p) or "no details"


def _uri(args: dict[str, Any]) -> str:
    uri = args.get("uri") if isinstance(args, dict) else None
    if not isinstance(uri, str) or not uri:
        raise CommandError('expected an argument object with "uri" (and "line" for convert)')
    return uri


def _line(args: dict[str, Any]) -> int:
    line = args.get("line")
    if not isinstance(line, int) or isinstance(line, bool) or line < 0:
        raise CommandError('"line" must be a 0-based line number')
    return line


def _name(uri: str) -> str:
    return Path(to_fs_path(uri) or uri).name


def _identifier(name: str) -> str:
    return (name if name[:1].isalpha() or name[:1] == "_" else f"task_{name}")[:64]
