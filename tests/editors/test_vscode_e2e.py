"""The VS Code extension end to end, in a real VS Code: code-server 4.100.3 driven by Playwright and Debian's
chromium. `bash editors/vscode/e2e/setup.sh` installs them (editors/vscode/e2e/README.md); without them the test is
skipped.

The built .vsix is installed into code-server; the workspace's settings point the extension at this Python and at a
real `tritonize serve` (built-in inductor backend, CPU). The first test sees a TRI203 diagnostic in the Problems
panel, hovers it (the rule explained), applies its quick fix, fixes another file on save (source.fixAll), converts
examples/layernorm_gelu.py through the editor context menu, accepts the refactor preview, checks the kernel file on
disk and the report panel, verifies the kernel, adds example inputs to a function, then cancels a conversion from
its notification while Inductor compiles (the compile stops within 2 s, no scratch directory is left). The second
starts with an interpreter that lacks tritonize, then switches to this one. The third opens a project without
Triton: no diagnostic, no Tritonize entry in the context menu, no notification. Screenshots go to
$TRITONIZE_VSCODE_SCREENSHOTS (else the test's temporary directory).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.editors import vscode_build
from tests.model_server import serving
from tests.test_project import ROOT
from tests.verifier.audit.helpers import HEADER
from tests.verifier.audit.test_memory import ROW_STRIDE
from verifier import procs

CACHE = Path(os.environ.get("TRITONIZE_E2E_CACHE", vscode_build.EXTENSION / "e2e" / ".cache"))
CODE_SERVER = CACHE / "code-server" / "node_modules" / ".bin" / "code-server"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SETUP = "run `bash editors/vscode/e2e/setup.sh`"
BUG = HEADER + ROW_STRIDE.lstrip()  # the audit's own TRI203 example: `row * stride` overflows in int32
SCALED_TANH = """import torch


def scaled_tanh(x: torch.Tensor, y: torch.Tensor):
    return torch.tanh(x) * y + 1.0
"""
PLAIN = """import json


def load(path):
    with open(path) as f:
        return json.load(f)
"""
SLOW_IMPORT = "\nimport time as _time\n\n_time.sleep(600)  # importing the task takes 10 minutes\n"
BROKEN = "def broken(:\n    return 1\n"  # a syntax error: a Python language server's to report, not tritonize's
EDITOR_SETTINGS = {  # a quiet VS Code: no welcome page, trust prompt, update or telemetry
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoUpdate": False,
    "extensions.autoCheckUpdates": False,
    "update.mode": "none",
    "workbench.tips.enabled": False,
}
ROUND_ONE = "Tritonize: converting to Triton: round 1: "
CONVERSION_SECONDS = 240  # inductor capture and two verification trials in Triton's interpreter on a CPU

sync_api = pytest.importorskip("playwright.sync_api", reason=f"Playwright for Python is not installed ({SETUP})")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(vscode_build.MISSING is not None, reason=vscode_build.MISSING or ""),
    pytest.mark.skipif(not CODE_SERVER.exists(), reason=f"code-server is not set up in {CACHE} ({SETUP})"),
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"chromium is not installed ({SETUP})"),
]


@pytest.fixture
def screenshots(tmp_path) -> Path:
    folder = Path(os.environ.get("TRITONIZE_VSCODE_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def workspace(tmp_path, model_server) -> Path:
    folder = tmp_path / "workspace"
    (folder / ".vscode").mkdir(parents=True)
    (folder / "bug.py").write_text(BUG)
    (folder / "fix_on_save.py").write_text(BUG)
    shutil.copy(ROOT / "examples" / "layernorm_gelu.py", folder / "layernorm_gelu.py")
    softmax = (ROOT / "examples" / "softmax.py").read_text()
    # no capture cached for it, and one that cannot finish on its own while the test waits: only Cancel ends it
    (folder / "softmax.py").write_text(softmax + f"\n\nE2E_RUN = {time.time_ns()}\n" + SLOW_IMPORT)
    (folder / "scaled_tanh.py").write_text(SCALED_TANH)
    _configure(folder, interpreter=sys.executable, serverUrl=model_server)
    return folder


def _configure(workspace: Path, interpreter: str, serverUrl: str) -> None:
    """The workspace's settings: this Python, the test's model server, and one small conversion."""
    settings = {
        "tritonize.interpreter": interpreter,
        "tritonize.serverUrl": serverUrl,
        "tritonize.autoStart": False,
        "tritonize.samples": 1,
        "tritonize.rounds": 1,
        "tritonize.trials": 2,
        "editor.codeActionsOnSave": {"source.fixAll.tritonize": "explicit"},
    }
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(settings, indent=2))


@pytest.fixture
def code_server(tmp_path, workspace):
    """code-server with the built .vsix installed, serving `workspace`; yields its URL, then stops its whole process
    group (the extension host and the language server with it)."""
    vsix = vscode_build.packaged()
    user_data, extensions = tmp_path / "user-data", tmp_path / "extensions"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(EDITOR_SETTINGS))
    common = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    installed = subprocess.run(
        [CODE_SERVER, *common, "--install-extension", str(vsix)], capture_output=True, text=True, timeout=120
    )
    assert "successfully installed" in installed.stdout, installed.stdout + installed.stderr
    port = serving.free_port()
    log = (tmp_path / "code-server.log").open("w")
    command = [CODE_SERVER, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}", *common]
    command += ["--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", str(workspace)]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: _answers(url), "code-server to listen", 60)
        yield f"{url}/?folder={workspace}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def test_diagnostic_quick_fix_convert_and_cancel_in_code_server(code_server, workspace, model_server, screenshots):
    with _workbench(code_server, screenshots / "failure.png") as page:
        _drive(page, workspace, screenshots)
        _cancel(page, workspace, model_server)


def test_an_interpreter_without_tritonize_is_named_and_a_new_one_restarts_the_server(
    code_server, workspace, model_server, screenshots, tmp_path
):
    settings = workspace / ".vscode" / "settings.json"
    server_url = json.loads(settings.read_text())["tritonize.serverUrl"]
    bare = tmp_path / "bare-python"  # stands for a Python that lacks tritonize: its import fails as Python's would
    bare.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'lsp_server'\" >&2\nexit 1\n")
    bare.chmod(0o755)
    _configure(workspace, interpreter=str(bare), serverUrl=server_url)
    with _workbench(code_server, screenshots / "failure-start.png") as page:
        _open(page, "bug.py")
        failure = page.locator(".notification-toast", has_text="tritonize is not installed in")
        failure.wait_for(timeout=60_000)
        text = failure.inner_text()
        assert f"{bare} (from the tritonize.interpreter setting)" in text, text
        for action in ("Install tritonize into this interpreter", "Select Interpreter", "Show Output"):
            assert failure.get_by_role("button", name=action).is_visible(), action
        _language_status(page, "codicon-error")
        page.screenshot(path=str(screenshots / "start-failure.png"))
        page.keyboard.press("Escape")

        _configure(workspace, interpreter=sys.executable, serverUrl=server_url)  # restarts the server
        _language_status(page, "codicon-zap")
        page.keyboard.press("Escape")
        page.keyboard.press("Control+Shift+M")
        page.locator(".markers-panel .monaco-list-row", has_text="TRI203").first.wait_for(timeout=60_000)


def test_a_project_without_triton_hears_nothing_from_tritonize(code_server, workspace, screenshots):
    """Plain Python files, one with a syntax error: no diagnostic, no Tritonize entry in their context menu, no
    notification. A Triton file opened afterwards gets its finding, so the server was listening all along."""
    for file in workspace.glob("*.py"):
        file.unlink()
    (workspace / "plain.py").write_text(PLAIN)
    (workspace / "broken.py").write_text(BROKEN)
    with _workbench(code_server, screenshots / "failure-quiet.png") as page:
        _open(page, "broken.py")
        _language_status(page, "codicon-zap")
        page.keyboard.press("Escape")
        for name, line in (("plain.py", "def load("), ("broken.py", "def broken(")):
            entries = _context_menu_entries(page, workspace / name, line)
            assert "Command Palette..." in entries, entries
            assert not {"Convert to Triton", "Verify this Kernel", "Add Example Inputs"} & set(entries), entries
        (workspace / "bug.py").write_text(BUG)
        new_file = page.locator(".explorer-item", has_text="bug.py")
        new_file.wait_for(timeout=30_000)  # the file watcher saw it; Quick Open's index may lag behind it
        new_file.click()
        page.locator(".tab.active[aria-label^='bug.py']").wait_for(timeout=30_000)
        page.keyboard.press("Control+Shift+M")
        page.locator(".markers-panel .monaco-list-row", has_text="TRI203").first.wait_for(timeout=60_000)
        files = page.locator(".markers-panel .monaco-list-row .file-icon").all_inner_texts()
        assert [name.strip() for name in files] == ["bug.py"], files
        page.screenshot(path=str(screenshots / "quiet.png"))
        toasts = page.locator(".notification-toast").all_inner_texts()
        assert not [toast for toast in toasts if "tritonize" in toast.lower()], toasts


@contextlib.contextmanager
def _workbench(url: str, failure: Path) -> Iterator:
    """A chromium page on code-server's workbench at `url`; a screenshot to `failure` if the block fails."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        try:
            page.goto(url)
            page.wait_for_selector(".monaco-workbench", timeout=60_000)
            yield page
        except BaseException:
            page.screenshot(path=str(failure))
            raise
        finally:
            browser.close()


def _drive(page, workspace: Path, screenshots: Path) -> None:
    # A buggy kernel: its TRI203 finding in the Problems panel, then its quick fix from there.
    _open(page, "bug.py")
    _language_status(page, "codicon-zap")  # activated by a Python file; the model server answered /health
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Shift+M")
    finding = page.locator(".markers-panel .monaco-list-row", has_text="TRI203").first
    finding.wait_for(timeout=60_000)
    page.screenshot(path=str(screenshots / "problems.png"))
    _hover(page, finding, screenshots / "hover.png")
    page.keyboard.press("Control+Shift+M")
    fix = _quick_fixes(page, finding, "Make the program id int64 (TRI203)")
    page.screenshot(path=str(screenshots / "quick-fix.png"))
    fix.click()
    page.locator(".monaco-editor .view-lines").first.click()
    page.keyboard.press("Control+S")
    _until(lambda: "tl.program_id(0).to(tl.int64)" in (workspace / "bug.py").read_text(), "the fixed file on disk")
    _until(lambda: page.locator(".markers-panel .monaco-list-row", has_text="TRI203").count() == 0, "TRI203 to go")

    # Fix all on save (editor.codeActionsOnSave runs source.fixAll.tritonize): an edit, Ctrl+S, the fix on disk.
    _open(page, "fix_on_save.py")
    page.locator(".markers-panel .monaco-list-row", has_text="TRI203").first.wait_for(timeout=60_000)
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.press("Control+S")
    fixed = workspace / "fix_on_save.py"
    _until(lambda: "tl.program_id(0).to(tl.int64)" in fixed.read_text(), "fix all on save to reach the disk")
    _until(lambda: page.locator(".markers-panel .monaco-list-row", has_text="TRI203").count() == 0, "TRI203 to go")

    # Convert to Triton from the editor context menu, on the Model class.
    notification = _convert_from_context_menu(page, workspace / "layernorm_gelu.py", screenshots / "context-menu.png")
    assert notification.get_by_role("button", name="Cancel").is_visible()
    preview = page.locator(".monaco-list-row", has_text="layernorm_gelu_triton.py")
    progress: list[str] = []  # the notification's message, each time it changed
    deadline = time.monotonic() + CONVERSION_SECONDS
    while not preview.count():
        assert time.monotonic() < deadline, f"no refactor preview; progress seen: {progress}"
        message = notification.locator(".notification-list-item-message").all_inner_texts()
        if message and message[0] not in progress:
            progress.append(message[0])
            if message[0].startswith(ROUND_ONE) and sum(text.startswith(ROUND_ONE) for text in progress) == 1:
                page.screenshot(path=str(screenshots / "progress.png"))
        time.sleep(0.1)
    # The server's progress lines reach the notification (which of them show depends on how fast they come).
    assert any(text.startswith(ROUND_ONE) for text in progress), progress
    _until(lambda: notification.count() == 0, "the notification to close once the server's work is done", 10)
    page.screenshot(path=str(screenshots / "refactor-preview.png"))

    # Accept the preview: VS Code leaves changes that ask for confirmation unticked, so tick it, then Apply.
    assert not (workspace / "layernorm_gelu_triton.py").exists()
    preview.first.locator(".edit-checkbox").click()
    page.get_by_role("button", name="Apply").click()
    kernel_file = workspace / "layernorm_gelu_triton.py"
    _until(lambda: kernel_file.exists() and "class ModelNew" in kernel_file.read_text(), "the kernel file on disk", 60)
    kernel = kernel_file.read_text()
    ast.parse(kernel)
    assert "@triton.jit" in kernel and "# tritonize-task: layernorm_gelu.py::Model" in kernel
    assert "verified correct on cpu" in kernel

    # The report panel beside the editor: verdict, error, device, speedups, coverage.
    report = _report_text(page)
    assert "Converted to Triton: layernorm_gelu_triton.py" in report
    for expected in ("Verdict\tcorrect (reward 1, strict policy)", "Device\tcpu (Triton interpreter)", "Coverage\t"):
        assert expected in report, report
    assert "Speedup vs eager\tnot timed (timing needs a GPU)" in report
    page.screenshot(path=str(screenshots / "convert.png"))

    # Verify the new kernel from its own context menu: the report panel turns to it.
    _context_menu(page, kernel_file, "class ModelNew(nn.Module):", "Verify this Kernel")
    _until(lambda: "Verified layernorm_gelu_triton.py" in _report_text(page), "the verification report", 120)
    assert "Verdict\tcorrect (reward 1, strict policy)" in _report_text(page)

    # Add example inputs to a plain function, from the context menu.
    _context_menu(page, workspace / "scaled_tanh.py", "def scaled_tanh(", "Add Example Inputs")
    added = page.locator(".editor-group-container.active .view-line", has_text="def get_inputs():")
    _until(lambda: added.count() == 1, "get_inputs() in the buffer")


def _cancel(page, workspace: Path, model_server: str) -> None:
    """Cancel a conversion from its notification: the model server stops it and nothing is placed."""
    notification = _convert_from_context_menu(page, workspace / "softmax.py")

    def conversions() -> int:
        return httpx.get(f"{model_server}/health", timeout=5).json()["conversions"]

    _until(lambda: conversions() == 1, "the conversion to reach the model server", 60)
    scratch = set(Path(tempfile.gettempdir()).glob("tritonize-*"))
    _until(lambda: _captures() != [], "Inductor's capture to start on the model server", 60)
    notification.get_by_role("button", name="Cancel").click()
    # the capture imports the task, which sleeps for 10 minutes: gone within the wait, it was stopped by the Cancel
    _until(lambda: _captures() == [], "Inductor's capture to stop after Cancel", 60)
    _until(lambda: conversions() == 0, "the model server to stop the conversion", 60)
    assert set(Path(tempfile.gettempdir()).glob("tritonize-*")) <= scratch, "a scratch directory was left behind"
    assert not notification.count()
    assert page.locator(".monaco-list-row", has_text="softmax_triton.py").count() == 0
    assert not (workspace / "softmax_triton.py").exists()


def _captures() -> list[str]:
    """The pids of Inductor capture processes this test's model server runs (its compile sandbox), or that lost
    their parent; other tests' captures, in a parallel run, are neither."""
    found = subprocess.run(["pgrep", "-f", "model_server.inductor.capture"], capture_output=True, text=True)
    ours = {str(pid) for pid in [*procs.descendants(os.getpid()), *procs.children(1)]}
    return [pid for pid in found.stdout.split() if pid in ours]


def _hover(page, finding, screenshot: Path) -> None:
    """Go to the finding's position (from its Problems row), show the hover (Ctrl+K Ctrl+I): the rule explained."""
    where = re.search(r"\[Ln (\d+), Col (\d+)\]", finding.inner_text())
    assert where, finding.inner_text()
    page.locator(".monaco-editor .view-lines").first.click()
    _go_to(page, f"{where[1]}:{where[2]}")
    page.keyboard.press("Control+K")
    page.keyboard.press("Control+I")
    hover = page.locator(".monaco-hover", has_text="int32-offset-overflow")
    hover.first.wait_for(timeout=30_000)
    text = hover.first.inner_text()
    for expected in ("TRI203 int32-offset-overflow", "Why it matters:", "Fix: tl.program_id(0).to(tl.int64)"):
        assert expected in text, text
    assert text.count("is computed in int32 and overflows") == 1, "the finding's message is shown once"
    page.screenshot(path=str(screenshot))
    page.keyboard.press("Escape")


def _convert_from_context_menu(page, file: Path, screenshot: Path | None = None):
    """Convert the `class Model` of `file` from the context menu; the progress notification."""
    _context_menu(page, file, "class Model(nn.Module):", "Convert to Triton", screenshot)
    notification = page.locator(".notification-toast", has_text="Tritonize: converting to Triton")
    notification.wait_for(timeout=30_000)
    return notification


def _context_menu(page, file: Path, line_text: str, command: str, screenshot: Path | None = None) -> None:
    """Open the context menu on the line of `file` starting with `line_text`; choose `command`."""
    _open_context_menu(page, file, line_text)
    item = page.locator(".context-view .monaco-menu .action-label", has_text=command)
    item.wait_for(timeout=10_000)
    if screenshot is not None:
        page.screenshot(path=str(screenshot))
    time.sleep(0.5)  # VS Code ignores a click that comes right after its menu opened
    item.click()


def _context_menu_entries(page, file: Path, line_text: str) -> list[str]:
    """The entries of the context menu on the line of `file` starting with `line_text`; the menu is closed."""
    _open_context_menu(page, file, line_text)
    items = page.locator(".context-view .monaco-menu .action-label")
    items.first.wait_for(timeout=10_000)
    entries = [text.strip() for text in items.all_inner_texts() if text.strip()]
    page.keyboard.press("Escape")
    items.first.wait_for(state="hidden", timeout=10_000)
    return entries


def _open_context_menu(page, file: Path, line_text: str) -> None:
    """Open `file`, go to the line starting with `line_text` (Ctrl+G), open the context menu at the cursor
    (Shift+F10). The keyboard, not a right-click: a click on a wide line scrolls the editor sideways to the
    line's middle, and the mouse over a finding opens its hover on top of the line."""
    _open(page, file.name)
    number = next(i for i, text in enumerate(file.read_text().splitlines(), 1) if text.startswith(line_text))
    _go_to(page, str(number))
    page.keyboard.press("Shift+F10")


def _go_to(page, where: str) -> None:
    """Move the cursor with Go to Line (Ctrl+G): `where` is "LINE" or "LINE:COLUMN"."""
    page.keyboard.press("Control+G")
    page.locator(".quick-input-widget input").wait_for(timeout=10_000)
    page.keyboard.type(where)
    page.keyboard.press("Enter")


def _open(page, name: str) -> None:
    """Quick Open (Ctrl+P) a workspace file and wait for its tab."""
    page.keyboard.press("Control+P")
    page.locator(".quick-input-widget input").wait_for(timeout=10_000)
    page.keyboard.type(name)
    page.locator(".quick-input-list .monaco-list-row.focused", has_text=name).wait_for(timeout=10_000)
    page.keyboard.press("Enter")
    page.locator(f".tab.active[aria-label^='{name}']").wait_for(timeout=30_000)
    page.locator(".monaco-editor .view-lines").first.wait_for(timeout=30_000)


def _language_status(page, icon: str, timeout: float = 60.0) -> None:
    """Hover the language status (`{}` beside the language mode) until its Tritonize item shows `icon`."""
    deadline = time.monotonic() + timeout
    item = page.locator(".hover-language-status", has_text="Tritonize: inductor")
    while time.monotonic() < deadline:
        page.locator("[id='status.languageStatus']").hover()
        try:
            item.first.wait_for(timeout=3_000)
            if item.first.locator(f".{icon}").count() > 0:
                return
        except sync_api.TimeoutError:
            pass
        page.mouse.move(0, 0)
        time.sleep(1)
    pytest.fail(f"the language status never showed Tritonize with {icon}")


def _quick_fixes(page, finding, title: str):
    """Select the finding in the Problems panel and open its quick fixes (Ctrl+.); the menu item `title`. The
    shortcut is sent again if the menu does not open: focus may still be moving to the finding."""
    fix = page.get_by_text(title)
    for _ in range(3):
        finding.click()
        time.sleep(1)
        page.keyboard.press("Control+.")
        try:
            fix.wait_for(timeout=10_000)
            return fix
        except sync_api.TimeoutError:
            page.keyboard.press("Escape")
    pytest.fail(f"no quick fix {title!r} in the Problems panel")


def _report_text(page, timeout: float = 30.0) -> str:
    """The text of the report webview (an iframe inside an iframe), once it shows a verdict."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for frame in page.frames:
            try:
                if frame.locator("#verdict").count():
                    return frame.locator("body").inner_text()
            except sync_api.Error:  # a frame that went away while it was read
                continue
        time.sleep(0.5)
    pytest.fail("the report panel did not show")


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code < 500
    except httpx.TransportError:
        return False


def _until(condition, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.3)
