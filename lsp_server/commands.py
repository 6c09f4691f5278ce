"""The workspace commands behind the code actions: convert, apply a proposal, verify.

Each takes the session and the command's one argument object, returns a small JSON result (`status` plus
details) so editors and tests can act on it, and tells the user the outcome in exactly one message. Work runs
under cancellable progress; cancelling closes the model server request, which stops the conversion there too.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_server import placement, task_source
from lsp_server.errors import CommandError
from lsp_server.progress import work_done
from lsp_server.session import OnProgress, Session
from lsp_server.settings import Settings
from model_server import api
from verifier import declared_dynamic, passes

CONVERT = "tritonize.convert"
APPLY = "tritonize.applyProposal"
VERIFY = "tritonize.verify"


async def convert(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    """Convert the definition at `args["line"]` of `args["uri"]`; apply it or, with `preview`, propose it."""
    uri, line = _uri(args), _line(args)
    snapshot = session.snapshot(uri)
    if snapshot.tree is None:
        raise CommandError(f"{_name(uri)} does not parse; fix the syntax error first")
    target = task_source.target_at(snapshot.tree, line + 1)
    if target is None:
        raise CommandError("put the cursor inside a top-level function or an nn.Module class with forward()")
    task = task_source.build_task(snapshot.source, snapshot.tree, target)
    settings = await session.load_settings(uri)
    async with (
        work_done(session, f"Converting {target.name} to Triton") as on_progress,
        await session.model_client(settings, on_progress) as client,
    ):
        body = _convert_body(task, _module_name(uri), settings)
        done, failures = await _stream(client.convert(body), on_progress, settings)
    if done is None or done["best"] is None:
        reason = failures[-1] if failures else (done or {}).get("stopped", "the stream ended early")
        session.tell(f"tritonize: no correct Triton kernel for {target.name} ({reason})", types.MessageType.Warning)
        return {"status": "not_correct", "message": reason, "candidates": (done or {}).get("candidates", 0)}
    verified = done["report"]
    header = placement.report_comment(target, _name(uri), verified, settings.backend)
    converted = placement.Converted(done["best"]["source"], header)
    proposal = _place(session, uri, target, converted, settings.placement)
    result = {"report": verified, "source": converted.source, "summary": converted.summary}
    if args.get("preview"):
        key = str(uuid.uuid4())
        session.keep_proposal(key, proposal)
        preview = {
            "uri": proposal.uri,
            "new_file": proposal.new_file,
            "before": proposal.before,
            "after": proposal.text,
        }
        return {"status": "proposed", "proposal": key, "preview": preview, **result}
    return {**await apply(session, proposal), **result}


async def apply_proposal(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    key = args.get("proposal")
    proposal = session.proposals.pop(key, None) if isinstance(key, str) else None
    if proposal is None:
        raise CommandError("no such proposal (it was applied already, or the server restarted); convert again")
    return await apply(session, proposal)


async def apply(session: Session, proposal: placement.Proposal) -> dict[str, Any]:
    """Put the kernel in place; a new file the client cannot create is written here, never over another.

    If the document changed since the proposal was made (typing during a conversion), the target is found
    again by name in the current text, so the kernel lands where it belongs and nothing typed is lost.
    """
    if not proposal.new_file and session.version(proposal.uri) != proposal.version:
        proposal = proposal.redo()
    edit = placement.workspace_edit(proposal, session.client)
    if edit is None:
        try:
            with open(proposal.path, "x", encoding="utf-8") as handle:
                handle.write(proposal.text)
        except OSError as exc:
            raise CommandError(f"cannot write {proposal.path}: {exc.strerror}") from exc
    else:
        outcome = await session.apply_edit(edit, "tritonize: Convert to Triton")
        if not outcome.applied:
            reason = outcome.failure_reason or "declined"
            session.tell(f"tritonize: kernel not applied ({reason})", types.MessageType.Info)
            return {"status": "declined", "uri": proposal.uri}
    if proposal.new_file:
        await session.show(proposal.uri)
    session.tell(f"tritonize: {proposal.summary}", types.MessageType.Info)
    return {"status": "applied", "uri": proposal.uri}


async def verify(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    """Verify the ModelNew in `args["uri"]` against the task its `# tritonize-task:` line (or name) points to."""
    uri = _uri(args)
    snapshot = session.snapshot(uri)
    reference = task_source.task_reference(snapshot.source, snapshot.path)
    if reference is None:
        raise CommandError(f"{_name(uri)} names no task: add a line `{task_source.TASK_MARKER} file.py::Model`")
    task_path, name = reference
    task_text = session.text_of(task_path)
    tree = task_source.parse(task_text)
    target = task_source.target_named(tree, name)
    if target is None:
        raise CommandError(f"{Path(task_path).name} has no top-level {name} to verify against")
    task = task_source.build_task(task_text, tree, target)
    settings = await session.load_settings(uri)
    async with (
        work_done(session, f"Verifying {_name(uri)} against {name}") as on_progress,
        await session.model_client(settings, on_progress) as client,
    ):
        on_progress("running the candidate and the task in the sandbox", None)
        result = await client.verify(
            task,
            snapshot.source,
            trials=settings.trials,
            policy=settings.policy,
            dynamic=declared_dynamic(snapshot.source, first_lines=None),
        )
    verdict = result.get("verdict")
    passed = passes(verdict, result.get("reward", 0), result.get("policy", "strict"))
    kind = types.MessageType.Info if passed else types.MessageType.Warning
    session.tell(f"tritonize: {_name(uri)} is {verdict} against {name}: {_describe(result)}", kind)
    return {"status": "verified", "report": result}


def _convert_body(task: str, module: str, settings: Settings) -> dict[str, Any]:
    request = api.ConvertRequest(
        task=task,
        task_name=module,
        backend=settings.backend,
        model=settings.model,
        samples=settings.samples,
        rounds=settings.rounds,
        trials=settings.trials,
        policy=settings.policy,
        dynamic=settings.dynamic,
    )
    return request.to_body()


def _place(
    session: Session, uri: str, target: task_source.Target, converted: placement.Converted, where: str
) -> placement.Proposal:
    """The proposal against the document as it is now (a new file when the target is gone from it)."""
    snapshot = session.snapshot(uri)
    current = task_source.target_named(snapshot.tree, target.name)
    if current is None:
        where, current = "new_file", target
    proposal = placement.propose(snapshot, current, converted, where)
    proposal.redo = lambda: _place(session, uri, target, converted, where)
    return proposal


REFUSED_HYBRID = (
    "only a hybrid kernel (a library call does part of the work) was correct, which the strict policy refuses; "
    'set tritonize.policy to "hybrid" to accept it'
)


async def _stream(events, on_progress: OnProgress, settings: Settings) -> tuple[api.Done | None, list[str]]:
    """Follow the conversion's events; each one's text is a progress line, named by its phase. A percentage is
    given only where it is known: while a round's candidates are verified (k of n)."""
    done, failures, backend = None, [], ""
    async for event in events:
        kind = event.get("event")
        percentage = None
        if kind == "accepted":
            backend = event.get("backend") or ""
        if kind == "candidate":
            percentage = min(99, 100 * int(event.get("index") or 0) // max(int(event.get("of") or 1), 1))
            if settings.policy == "strict" and event.get("policy") == "hybrid" and event.get("verdict") == "correct":
                failures.append(REFUSED_HYBRID)
        text = _phase(event, backend) if kind == "round" else event.get("text")
        if text:
            on_progress(text, percentage)
        if kind == "error":
            failures.append(event.get("message", "error"))
        if kind == "done":
            done = event
    return done, failures


def _phase(event: dict[str, Any], backend: str) -> str:
    """A round's start as the phase it begins: Inductor compiles the task; a model generates candidates."""
    if backend == "inductor":
        return f"round {event.get('round')}: compiling the task with Inductor (its kernels become the candidates)"
    return str(event.get("text") or "")


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
    uri = args.get("uri")
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


def _module_name(uri: str) -> str:
    """The document's module name as the model server takes it (an ASCII identifier): what the converted kernel's
    docstring names, as `tritonize convert` names the task's file."""
    name = re.sub(r"\W", "_", Path(_name(uri)).stem, flags=re.ASCII)
    return (name if name[:1].isalpha() or name[:1] == "_" else f"task_{name}")[:64]
