"""Counts real Triton kernel launches, the only robust proof that a candidate's compute ran in Triton.

On a GPU the hook sits on Triton's launcher (`triton.knobs.runtime.launch_enter_hook`) and also records the
stream each kernel went to. Under the CPU interpreter (`TRITON_INTERPRET=1`) there is no launcher, so the
interpreter's grid executor is wrapped instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LaunchCounter:
    """Launches seen since the last `reset()`: how many, of which kernels, on which streams."""

    count: int = 0
    names: list[str] = field(default_factory=list)
    streams: set[int] = field(default_factory=set)
    installed_hook: object = None
    inside: int = 0  # interpreted launches running now (their own tensor copies are not the candidate's work)

    def reset(self) -> None:
        self.count = 0
        self.names.clear()
        self.streams.clear()

    def record(self, name: str, stream: int | None) -> None:
        self.count += 1
        if len(self.names) < 64:
            self.names.append(name)
        if stream is not None:
            self.streams.add(int(stream))

    def on_launch(self, metadata: object) -> None:
        """Triton's launch-enter hook: `metadata` is a LazyDict holding `name` and `stream`."""
        data = getattr(metadata, "data", None) or {}
        self.record(str(data.get("name", "?")), data.get("stream"))


def install(interpreter: bool) -> LaunchCounter:
    """Install a counter on the launch path that this process uses and return it."""
    counter = LaunchCounter()
    if interpreter:
        _wrap_interpreter(counter)
    else:
        _hook_launcher(counter)
    return counter


def _hook_launcher(counter: LaunchCounter) -> None:
    from triton import knobs

    hooks = knobs.runtime.launch_enter_hook
    if hasattr(hooks, "add"):
        hooks.add(counter.on_launch)
    else:
        previous = hooks

        def chained(metadata: object) -> None:
            counter.on_launch(metadata)
            if previous is not None:
                previous(metadata)

        knobs.runtime.launch_enter_hook = chained
    counter.installed_hook = counter.on_launch


def _wrap_interpreter(counter: LaunchCounter) -> None:
    from triton.runtime import interpreter

    original = interpreter.GridExecutor.__call__

    def counted_call(self, *args, **kwargs):
        counter.record(getattr(self.fn, "__name__", "?"), None)
        counter.inside += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            counter.inside -= 1

    interpreter.GridExecutor.__call__ = counted_call
    counter.installed_hook = counted_call


def still_installed(counter: LaunchCounter, interpreter: bool) -> bool:
    """False if something removed or replaced the hook after installation."""
    if interpreter:
        from triton.runtime import interpreter as interp

        return interp.GridExecutor.__call__ is counter.installed_hook
    from triton import knobs

    hooks = knobs.runtime.launch_enter_hook
    calls = getattr(hooks, "calls", None)
    return counter.on_launch in calls if calls is not None else hooks is not None
