"""One session's Chromium: started in the session's jail, driven over the DevTools Protocol.

:class:`Browser` owns the process, its pipe and its pages; :meth:`Browser.run` is the task that reads the
pipe (the session's ``browser`` actor runs it), and the tool calls use the page methods from their own
tasks. A call is cancelled like any Trio code: a page still loading when its call is cancelled (the turn
was interrupted) is told to stop loading before the cancellation goes on, so nothing is left running.

Pages: every page the browser opens (``window.open``, a link with ``target=_blank``) is attached before it
runs (``waitForDebuggerOnStart``), so its requests are checked and its console recorded from its first
line; the newest page is the one the tools act on. A page opened past ``browser.max_pages`` is closed.

Dialogs (:mod:`tools.browser.dialogs`): a page's ``alert`` holds the page, so a call waiting on a page that
opens one stops waiting at once (:class:`~tools.browser.errors.DialogBlocking`) instead of running into
``browser.command_timeout``; the dialog is answered by ``browser_dialog``, the policy or the watchdog.
"""

from __future__ import annotations

import base64
import fcntl
import functools
import logging
import os
import shutil
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import attrs
import trio

from config.browser import BrowserConfig
from tools.browser.cdp import CdpConnection
from tools.browser.chromium import chromium_argv, pipe_prologue
from tools.browser.dialogs import DIALOGS_KEPT, ClosedDialog, Dialog
from tools.browser.errors import BrowserError, BrowserUnavailable, CdpError, DialogBlocking
from tools.browser.requests import RequestRules
from tools.browser.snapshot import Snapshot, render_snapshot
from tools.errors import ToolError
from tools.jail import JailedProcess, SandboxMode, SessionJail, allowed_environment

__all__ = ["Browser", "ConsoleEntry", "Download"]

log = logging.getLogger(__name__)

# Console lines and script errors kept per page, the oldest dropped first.
_CONSOLE_KEPT = 500
# Seconds a stop (Page.stopLoading, Browser.close) may take once its call was cancelled.
_STOP_SECONDS = 2.0
# Seconds Chromium gets to exit after Browser.close before it is killed.
_EXIT_GRACE = 2.0
# Seconds a navigation that never committed is given to turn out a download.
_DOWNLOAD_START_SECONDS = 2.0
# How far one browser_scroll moves (Hermes's 500 pixels: about half a viewport).
SCROLL_PIXELS = 500
# Keys browser_press knows by name: (code, windows virtual key code, text typed).
_KEYS: dict[str, tuple[str, int, str]] = {
    "Enter": ("Enter", 13, "\r"), "Tab": ("Tab", 9, ""), "Escape": ("Escape", 27, ""),
    "Backspace": ("Backspace", 8, ""), "Delete": ("Delete", 46, ""), "Space": ("Space", 32, " "),
    "ArrowUp": ("ArrowUp", 38, ""), "ArrowDown": ("ArrowDown", 40, ""), "ArrowLeft": ("ArrowLeft", 37, ""),
    "ArrowRight": ("ArrowRight", 39, ""), "Home": ("Home", 36, ""), "End": ("End", 35, ""),
    "PageUp": ("PageUp", 33, ""), "PageDown": ("PageDown", 34, ""),
}  # fmt: skip
_CLEAR_FIELD = """function () {
  if (typeof this.select === 'function' && 'value' in this) { this.select(); }
  else if (this.isContentEditable) { document.getSelection().selectAllChildren(this); }
}"""
# Targets are attached held at their start, so their requests are checked from the first. The browser's own
# attaches pages; each page's and frame's attaches its out-of-process frames and workers, whose requests the
# page's Fetch does not see (a cross-site iframe runs in a process of its own).
_AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
_IMAGES = """[...document.images].map(img => ({src: img.src, alt: img.alt || '',
  width: img.naturalWidth, height: img.naturalHeight})).filter(img => img.src && !img.src.startsWith('data:'))"""


@attrs.frozen
class ConsoleEntry:
    """A console line (``kind`` log/warn/error/info ...) or a script error (``kind`` exception)."""

    kind: str
    text: str
    source: str


@attrs.define
class Download:
    """A file the pages downloaded into the workspace."""

    url: str
    path: str
    state: str = "inProgress"


class _Signal:
    """Wakes every task waiting for a change (a page event); each wait sees the next pulse."""

    def __init__(self) -> None:
        self._event = trio.Event()

    def pulse(self) -> None:
        self._event.set()
        self._event = trio.Event()

    async def wait(self) -> None:
        await self._event.wait()


@attrs.define
class _Page:
    """One page target, attached over its flat session."""

    target_id: str
    session_id: str
    url: str = "about:blank"
    loading: bool = False
    # Navigations asked for and navigations committed: one asked for and never committed became a download.
    requested: int = 0
    committed: int = 0
    # Loaders (navigations) whose page has reached DOMContentLoaded and load.
    content_loaded: set[str] = attrs.Factory(set)
    loaded: set[str] = attrs.Factory(set)
    console: deque[ConsoleEntry] = attrs.Factory(lambda: deque(maxlen=_CONSOLE_KEPT))
    refs: dict[str, int] = attrs.Factory(dict)
    ready: trio.Event = attrs.Factory(trio.Event)
    # Dialogs open on the page, oldest first, and the commands waiting on it (cancelled when one opens).
    dialogs: dict[str, Dialog] = attrs.Factory(dict)
    waiting: set[trio.CancelScope] = attrs.Factory(set)


class Browser:
    """A session's Chromium and its pages.

    Args:
        config: the ``browser`` section.
        jail: the session's jail: the browser starts through its launcher, under its policy and limits.
        executable: the browser found by :func:`~tools.browser.chromium.find_browser`.
    """

    def __init__(self, config: BrowserConfig, jail: SessionJail, executable: str) -> None:
        self.config = config
        self.jail = jail
        self.executable = executable
        self.rules = RequestRules(config.allowed_domains)
        self.downloads: dict[str, Download] = {}
        self.closed_pages = 0
        #: Dialogs answered lately, the oldest first.
        self.closed_dialogs: deque[ClosedDialog] = deque(maxlen=DIALOGS_KEPT)
        self._dialogs_opened = 0
        self._watchdogs: dict[str, trio.CancelScope] = {}
        self._pages: dict[str, _Page] = {}
        self._order: list[str] = []
        self._changed = _Signal()
        self._cdp: CdpConnection | None = None
        self._process: JailedProcess | None = None
        self._profile: str | None = None
        #: Where its profile was made (removed when it stops), None before it starts.
        self.profile_dir: str | None = None
        self._nursery: trio.Nursery | None = None
        self._output: deque[str] = deque(maxlen=20)
        #: Tool calls using the browser now, and when the last one ended (``trio.current_time()``).
        self.busy = 0
        #: Set once :meth:`run` has ended: the browser is gone, a new one must be started.
        self.stopped = False
        self.last_used = trio.current_time()
        self.used = _Signal()

    # -- life --------------------------------------------------------------------------------------------

    @property
    def download_dir(self) -> str | None:
        """Where downloads land: the session's workspace, None where the session may not write it."""
        policy = self.jail.policy
        return None if policy.mode is SandboxMode.READ_ONLY else policy.workspace

    @property
    def pid(self) -> int | None:
        """The browser's process (bubblewrap's, when jailed), None before it starts."""
        return None if self._process is None else self._process.pid

    @property
    def page_count(self) -> int:
        """Pages open now."""
        return len(self._order)

    @property
    def current_url(self) -> str:
        """The URL of the page the tools act on."""
        return self._pages[self._order[-1]].url if self._order else ""

    @asynccontextmanager
    async def in_use(self) -> AsyncIterator[None]:
        """Around a tool call's use of the browser: it is not closed for inactivity meanwhile."""
        self.busy += 1
        try:
            yield
        finally:
            self.busy -= 1
            self.last_used = trio.current_time()
            self.used.pulse()

    def download_guids(self) -> frozenset[str]:
        """The downloads known now (to tell which ones a call started)."""
        return frozenset(self.downloads)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the browser, report ready once its first page is attached, and serve its pipe until it
        exits or this task is cancelled; the browser is stopped and its profile removed either way.

        Raises:
            BrowserUnavailable: the browser could not start (its last output lines are in the message).
        """
        failure: BrowserError | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                failure = await self._serve(nursery, task_status)
                nursery.cancel_scope.cancel()
        finally:
            self.stopped = True
            with trio.CancelScope(shield=True):
                await self._shutdown()
        # Raised out here: from inside the nursery it would come out wrapped in an exception group.
        if failure is not None:
            raise failure

    async def _serve(self, nursery: trio.Nursery, task_status: trio.TaskStatus[None]) -> BrowserError:
        """Start the browser and serve it until it exits; returns why it ended (a failure to start included)."""
        try:
            await self._launch(nursery)
            with trio.move_on_after(self.config.command_timeout) as waited:
                await self._setup()
        except (CdpError, OSError) as exc:
            return BrowserUnavailable(self._failure(str(exc)))
        except ToolError as exc:  # no jail can run here: its message says what to do
            return BrowserUnavailable(str(exc))
        if waited.cancelled_caught:
            return BrowserUnavailable(self._failure(f"it did not start within {self.config.command_timeout:g} s"))
        task_status.started()
        assert self._process is not None
        await self._process.wait()
        return BrowserError(self._failure("it exited"))

    async def _launch(self, nursery: trio.Nursery) -> None:
        policy = self.jail.policy
        self._profile = await trio.to_thread.run_sync(
            lambda: tempfile.mkdtemp(prefix="browser-profile-", dir=policy.tmp_dir)
        )
        self.profile_dir = self._profile
        # Ours: we write commands into to_browser, read replies from from_browser. Its ends go to 10+ so
        # that moving them to 3 and 4 never overwrites one with the other.
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        child_read = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_write = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)
        # Jailed, the profile is under the jail's own /tmp; a full-access process does not see the
        # session's directories unless they are bound back in, as execute_code's are.
        profile = policy.jail_path(self._profile)
        binds = () if policy.jailed else (self._profile,)
        argv = chromium_argv(self.executable, self.config, profile, self.rules.resolver_rules())
        env = {**allowed_environment(os.environ), "HOME": profile}
        try:
            self._process = await self.jail.spawn(
                pipe_prologue(child_read, child_write, argv), cwd=profile, env=env, merge_stderr=True,
                pass_fds=(child_read, child_write), binds=binds,
            )  # fmt: skip
        except BaseException:
            for fd in (to_browser_w, from_browser_r):
                os.close(fd)
            raise
        finally:
            for fd in (child_read, child_write):
                os.close(fd)
        self._cdp = CdpConnection(
            trio.lowlevel.FdStream(to_browser_w), trio.lowlevel.FdStream(from_browser_r), self._on_event
        )
        nursery.start_soon(self._keep_output)
        nursery.start_soon(self._cdp.serve)

    async def _keep_output(self) -> None:
        """Drain the browser's output (a full pipe would stop it), keeping the last lines for errors."""
        assert self._process is not None
        pending = b""
        while data := await self._process.stdout.receive_some(65536):
            *lines, pending = (pending + data).split(b"\n")
            self._output.extend(line.decode(errors="replace")[:300] for line in lines if line.strip())

    def _failure(self, what: str) -> str:
        said = "; ".join(list(self._output)[-3:])
        return f"The browser ({self.executable}) could not be used: {what}." + (f" It said: {said}" if said else "")

    async def _setup(self) -> None:
        cdp = self._cdp
        assert cdp is not None
        download = self.download_dir
        await cdp.send("Browser.setDownloadBehavior", {
            "behavior": "deny" if download is None else "allow", "eventsEnabled": True,
            **({} if download is None else {"downloadPath": download}),
        })  # fmt: skip
        await cdp.send("Target.setAutoAttach", _AUTO_ATTACH)
        while not self._order:
            await self._changed.wait()
        await self._pages[self._order[-1]].ready.wait()

    async def _shutdown(self) -> None:
        cdp, process = self._cdp, self._process
        if cdp is not None and cdp.closed is None and process is not None and process.returncode is None:
            with trio.move_on_after(_STOP_SECONDS):
                try:
                    await cdp.send("Browser.close")
                except CdpError:
                    pass
        if process is not None:
            await process.stop(_EXIT_GRACE)
            process.close_pipes()
        if self._profile is not None:
            profile, self._profile = self._profile, None
            await trio.to_thread.run_sync(lambda: shutil.rmtree(profile, ignore_errors=True))

    # -- events ------------------------------------------------------------------------------------------

    def _on_event(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
        if method == "Target.attachedToTarget":
            self._attached(params)
        elif method == "Target.detachedFromTarget":
            self._detached(params.get("sessionId", ""))
        elif method.startswith("Browser.download"):
            self._download(method, params)
        elif session_id is not None and (page := self._pages.get(session_id)) is not None:
            self._page_event(page, method, params)
        elif method == "Fetch.requestPaused" and session_id is not None:
            self._spawn(self._decide_request, session_id, params)

    def _spawn(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        if self._nursery is not None:
            self._nursery.start_soon(fn, *args)

    def _attached(self, params: dict[str, Any]) -> None:
        info, session_id = params.get("targetInfo", {}), params.get("sessionId", "")
        if info.get("type") != "page":
            # A worker or an out-of-process frame: its requests are checked too.
            self._spawn(self._resume, session_id)
            return
        if len(self._order) >= self.config.max_pages:
            self.closed_pages += 1
            log.info("browser: a page past browser.max_pages (%d) was closed", self.config.max_pages)
            self._spawn(self._close_target, info.get("targetId", ""))
            return
        page = _Page(info.get("targetId", ""), session_id, url=info.get("url") or "about:blank")
        self._pages[session_id] = page
        self._order.append(session_id)
        self._spawn(self._set_up_page, page)
        self._changed.pulse()

    def _detached(self, session_id: str) -> None:
        if (page := self._pages.pop(session_id, None)) is not None:
            self._order.remove(session_id)
            for dialog_id in list(page.dialogs):
                self._dialog_done(page, dialog_id, "page")
            self._changed.pulse()

    def _download(self, method: str, params: dict[str, Any]) -> None:
        guid = params.get("guid", "")
        if method == "Browser.downloadWillBegin" and self.download_dir is not None:
            name = os.path.basename(params.get("suggestedFilename") or "download") or "download"
            self.downloads[guid] = Download(params.get("url", ""), os.path.join(self.download_dir, name))
        elif method == "Browser.downloadProgress" and guid in self.downloads:
            self.downloads[guid].state = params.get("state", "inProgress")
        self._changed.pulse()

    def _page_event(self, page: _Page, method: str, params: dict[str, Any]) -> None:
        main_frame = params.get("frameId") == page.target_id
        if method == "Page.lifecycleEvent" and main_frame:
            name, loader = params.get("name"), params.get("loaderId", "")
            if name == "DOMContentLoaded":
                page.content_loaded.add(loader)
            elif name == "load":
                page.loaded.add(loader)
        elif method == "Page.frameRequestedNavigation" and main_frame:
            page.loading = True
            page.requested += 1
        elif method == "Page.frameStartedLoading" and main_frame:
            page.loading = True
        elif method == "Page.frameStoppedLoading" and main_frame:
            page.loading = False
        elif method == "Page.frameNavigated" and params.get("frame", {}).get("parentId") is None:
            page.url = params.get("frame", {}).get("url", page.url)
            page.committed += 1
        elif method == "Page.navigatedWithinDocument" and main_frame:
            page.url = params.get("url", page.url)
        elif method == "Runtime.consoleAPICalled":
            text = " ".join(_remote_text(arg) for arg in params.get("args", ()))
            page.console.append(ConsoleEntry(params.get("type", "log"), text, "console"))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            page.console.append(ConsoleEntry("exception", text, "exception"))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            page.console.append(ConsoleEntry(entry.get("level", "info"), entry.get("text", ""), entry.get("source", "browser")))
        elif method == "Fetch.requestPaused":
            self._spawn(self._decide_request, page.session_id, params)
            return
        elif method == "Page.javascriptDialogOpening":
            self._dialog_opened(page, params)
        elif method == "Page.javascriptDialogClosed" and page.dialogs:
            # Closed without us (the page navigated away): the oldest is the one that was showing.
            self._dialog_done(page, next(iter(page.dialogs)), "page")
        self._changed.pulse()

    # -- dialogs -----------------------------------------------------------------------------------------

    def _dialog_opened(self, page: _Page, params: dict[str, Any]) -> None:
        self._dialogs_opened += 1
        dialog = Dialog(
            id=f"d-{self._dialogs_opened}", type=str(params.get("type") or "alert"),
            message=str(params.get("message") or ""), default_prompt=str(params.get("defaultPrompt") or ""),
            opened_at=time.time(), session_id=page.session_id, frame_id=params.get("frameId"),
        )  # fmt: skip
        policy = self.config.dialog_policy
        if policy != "must_respond":
            self.closed_dialogs.append(ClosedDialog(dialog, time.time(), "auto_policy"))
            self._spawn(self._answer, dialog, policy == "auto_accept", dialog.default_prompt)
            return
        page.dialogs[dialog.id] = dialog
        for scope in page.waiting:
            scope.cancel()
        self._spawn(self._watch_dialog, page, dialog)

    def _dialog_done(self, page: _Page, dialog_id: str, closed_by: str) -> Dialog:
        dialog = page.dialogs.pop(dialog_id)
        self.closed_dialogs.append(ClosedDialog(dialog, time.time(), closed_by))
        if (watchdog := self._watchdogs.pop(dialog_id, None)) is not None:
            watchdog.cancel()
        return dialog

    async def _watch_dialog(self, page: _Page, dialog: Dialog) -> None:
        """Dismiss ``dialog`` once ``browser.dialog_timeout_s`` passed unanswered (a held page is of no use)."""
        with trio.CancelScope() as scope:  # cancelled when the dialog is answered first
            self._watchdogs[dialog.id] = scope
            await trio.sleep(self.config.dialog_timeout_s)
        if scope.cancelled_caught or dialog.id not in page.dialogs:
            return
        log.warning(
            "browser: the %s dialog %s was dismissed: unanswered for browser.dialog_timeout_s (%g s)",
            dialog.type, dialog.id, self.config.dialog_timeout_s,
        )  # fmt: skip
        self._dialog_done(page, dialog.id, "watchdog")
        self._changed.pulse()
        await self._answer(dialog, False, "")

    async def _answer(self, dialog: Dialog, accept: bool, prompt_text: str) -> None:
        try:
            await self._send_answer(dialog, accept, prompt_text)
        except CdpError as exc:
            log.debug("browser: dialog %s could not be answered: %s", dialog.id, exc)

    async def _send_answer(self, dialog: Dialog, accept: bool, prompt_text: str) -> None:
        params: dict[str, Any] = {"accept": accept}
        if dialog.type == "prompt":
            params["promptText"] = prompt_text
        await self._send("Page.handleJavaScriptDialog", params, dialog.session_id)

    def pending_dialogs(self) -> list[dict[str, Any]]:
        """The dialogs open on any page, oldest first, as the model sees them."""
        return [dialog.to_dict() for page in self._pages.values() for dialog in page.dialogs.values()]

    async def answer_dialog(self, accept: bool, prompt_text: str = "", dialog_id: str | None = None) -> Dialog:
        """Answer an open dialog (the only one, or ``dialog_id``); ``prompt_text`` is a prompt's answer.

        Raises:
            BrowserError: no dialog is open, ``dialog_id`` names none of them, or several are open and
                ``dialog_id`` was not given.
        """
        open_ = {dialog.id: page for page in self._pages.values() for dialog in page.dialogs.values()}
        if not open_:
            raise BrowserError("No dialog is open.")
        if dialog_id is None:
            if len(open_) > 1:
                raise BrowserError(f"{len(open_)} dialogs are open: pass dialog_id, one of {', '.join(open_)}.")
            dialog_id = next(iter(open_))
        elif dialog_id not in open_:
            raise BrowserError(f"No open dialog {dialog_id!r}; open: {', '.join(open_)}.")
        page = open_[dialog_id]
        # Marked answered before the answer goes: its Page.javascriptDialogClosed must not find it open.
        dialog = self._dialog_done(page, dialog_id, "agent")
        self._changed.pulse()
        await self._send_answer(dialog, accept, prompt_text)
        return dialog

    async def _set_up_page(self, page: _Page) -> None:
        assert self._cdp is not None
        try:
            # Posted in order, answered later: a page held at its start answers some only once it runs.
            posted = [
                await self._cdp.post(method, params, session_id=page.session_id)
                for method, params in (
                    ("Page.enable", {}), ("Page.setLifecycleEventsEnabled", {"enabled": True}), ("Runtime.enable", {}),
                    ("Log.enable", {}), ("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}),
                    ("Target.setAutoAttach", _AUTO_ATTACH), ("Runtime.runIfWaitingForDebugger", {}),
                )
            ]  # fmt: skip
            for command in posted:
                await self._cdp.result(command, timeout=self.config.command_timeout)
        except CdpError as exc:
            log.info("browser: a page could not be set up: %s", exc)
        finally:
            page.ready.set()

    async def _resume(self, session_id: str) -> None:
        assert self._cdp is not None
        posted = [
            await self._cdp.post(method, params, session_id=session_id)
            for method, params in (
                ("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}), ("Target.setAutoAttach", _AUTO_ATTACH),
                ("Runtime.runIfWaitingForDebugger", {}),
            )
        ]  # fmt: skip
        for command in posted:
            # Each on its own: a worker has no Target domain, which must not leave its Fetch unchecked.
            try:
                await self._cdp.result(command, timeout=self.config.command_timeout)
            except CdpError as exc:
                log.debug("browser: a frame or worker: %s", exc)

    async def _close_target(self, target_id: str) -> None:
        try:
            await self._send("Target.closeTarget", {"targetId": target_id}, None)
        except CdpError as exc:
            log.debug("browser: a page past the limit could not be closed: %s", exc)

    async def _decide_request(self, session_id: str, params: dict[str, Any]) -> None:
        url = params.get("request", {}).get("url", "")
        refusal = self.rules.refusal(url)
        try:
            if refusal is None:
                await self._send("Fetch.continueRequest", {"requestId": params["requestId"]}, session_id)
                return
            if (page := self._pages.get(session_id)) is not None:
                page.console.append(ConsoleEntry("error", f"Request blocked: {url} ({refusal})", "network"))
            await self._send("Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "BlockedByClient"}, session_id)
        except CdpError as exc:
            log.debug("browser: a paused request could not be answered: %s", exc)

    # -- commands ----------------------------------------------------------------------------------------

    async def _send(self, method: str, params: dict[str, Any], session_id: str | None) -> dict[str, Any]:
        if self._cdp is None:
            raise CdpError("The browser has not started.")
        return await self._cdp.send(method, params, session_id=session_id, timeout=self.config.command_timeout)

    async def _command(self, method: str, params: dict[str, Any], page: _Page | None = None) -> dict[str, Any]:
        """``method`` for the browser, or for ``page``: a page command is given up when the page opens a dialog.

        Raises:
            DialogBlocking: the page has a dialog open, or opened one while the command waited.
            CdpError: as :meth:`CdpConnection.send`.
        """
        if page is None:
            return await self._send(method, params, None)
        if page.dialogs:
            raise DialogBlocking(self.pending_dialogs())
        with trio.CancelScope() as opened:
            page.waiting.add(opened)
            try:
                return await self._send(method, params, page.session_id)
            finally:
                page.waiting.discard(opened)
        raise DialogBlocking(self.pending_dialogs())

    def page(self) -> _Page:
        """The page the tools act on (the newest open one).

        Raises:
            BrowserError: every page was closed.
        """
        if not self._order:
            raise BrowserError("The browser has no open page; call browser_navigate first.")
        return self._pages[self._order[-1]]

    @contextmanager
    def _stopped_when_cancelled(self, page: _Page) -> Iterator[None]:
        """Around a wait for a page: cancelled (an interrupt), the page stops loading before it ends."""
        try:
            yield
        except trio.Cancelled:
            self._spawn(self._stop_loading, page)
            raise

    async def _stop_loading(self, page: _Page) -> None:
        with trio.move_on_after(_STOP_SECONDS):
            try:
                await self._command("Page.stopLoading", {}, page)
            except BrowserError:  # gone, or held by a dialog (which stops its loading anyway)
                pass

    async def _wait_for(self, page: _Page, done: Callable[[], bool], what: str) -> None:
        """Wait until ``done()`` holds, a page event at a time; past the command timeout the page is stopped.

        Raises:
            BrowserError: it did not hold in ``browser.command_timeout`` seconds.
            DialogBlocking: the page opened a dialog meanwhile.
        """
        with self._stopped_when_cancelled(page):
            with trio.move_on_after(self.config.command_timeout) as waited:
                while not done():
                    if page.dialogs:
                        raise DialogBlocking(self.pending_dialogs())
                    await self._changed.wait()
            if waited.cancelled_caught:
                await self._stop_loading(page)
                raise BrowserError(
                    f"{what} did not finish within browser.command_timeout ({self.config.command_timeout:g} s); "
                    "it was stopped."
                )

    async def navigate(self, url: str) -> tuple[str, str]:
        """Load ``url`` in the current page and wait for it; returns the final URL and the title.

        Raises:
            BrowserError: the URL is refused, the page failed to load or did not load in time.
        """
        refusal = self.rules.navigation_refusal(url)
        if refusal is not None:
            raise BrowserError(f"Blocked: {refusal}")
        page = self.page()
        await page.ready.wait()
        with self._stopped_when_cancelled(page):
            reply = await self._command("Page.navigate", {"url": url}, page)
        if reply.get("errorText"):
            raise BrowserError(f"Navigation to {url} failed: {reply['errorText']}")
        loader = reply.get("loaderId")
        if loader:
            await self._wait_for(page, lambda: loader in page.loaded, f"Loading {url}")
        return page.url, await self.title(page)

    async def title(self, page: _Page | None = None) -> str:
        """The page's title."""
        value = await self.evaluate("document.title", page or self.page())
        return value if isinstance(value, str) else ""

    async def settled(self) -> _Page:
        """The current page once it is not loading (a navigation a click started has finished).

        Raises:
            BrowserError: it is still loading after ``browser.command_timeout`` (it was stopped).
        """
        page = self.page()
        await page.ready.wait()
        if page.loading:
            await self._wait_for(page, lambda: not page.loading, "Loading the page")
        return page

    async def snapshot(self, *, full: bool) -> Snapshot:
        """The current page's accessibility snapshot; its refs become the ones the tools act by."""
        page = await self.settled()
        reply = await self._command("Accessibility.getFullAXTree", {}, page)
        snapshot = render_snapshot(reply.get("nodes", []), full=full)
        page.refs = dict(snapshot.refs)
        return snapshot

    def _node(self, page: _Page, ref: str) -> int:
        key = ref.removeprefix("@")
        node = page.refs.get(key)
        if node is None:
            raise BrowserError(
                f"Unknown ref {ref}: take a browser_snapshot and use one of the refs it shows (the page may have changed)."
            )
        return node

    @asynccontextmanager
    async def _settling(self, page: _Page, what: str) -> AsyncIterator[None]:
        """Around an action that may start a navigation or a download: waits for them to finish."""
        downloads, pages = set(self.downloads), set(self._order)
        requested, committed = page.requested, page.committed
        yield
        # One round trip through the page: a navigation the action started has been reported by then.
        await self.evaluate("0", page)
        if page.loading:
            await self._wait_for(page, lambda: not page.loading, what)
        if page.requested > requested and page.committed == committed:
            # A navigation that never committed turned into a download, reported a moment later.
            with trio.move_on_after(_DOWNLOAD_START_SECONDS):
                while set(self.downloads) <= downloads:
                    await self._changed.wait()
        for opened in [self._pages[key] for key in self._order if key not in pages]:
            # A popup the action opened: the tools act on it next, once it has loaded.
            await opened.ready.wait()
            await self._wait_for(opened, functools.partial(_loaded, opened), f"The page {what} opened")
        started = [guid for guid in self.downloads if guid not in downloads]
        if started:
            await self._wait_for(
                page, lambda: all(self.downloads[guid].state != "inProgress" for guid in started), f"The download from {what}"
            )

    async def click(self, ref: str) -> None:
        """Click the element ``ref`` names, at the middle of its box, and wait for what it started.

        Raises:
            BrowserError: an unknown ref, or an element with no box (hidden).
        """
        page = self.page()
        node = self._node(page, ref)
        try:
            await self._command("DOM.scrollIntoViewIfNeeded", {"backendNodeId": node}, page)
            box = await self._command("DOM.getBoxModel", {"backendNodeId": node}, page)
        except CdpError as exc:
            raise BrowserError(f"Cannot click {ref}: it is not visible on the page ({exc}).") from exc
        quad = box["model"]["content"]
        x, y = sum(quad[0::2]) / 4, sum(quad[1::2]) / 4
        async with self._settling(page, f"the click on {ref}"):
            await self._command("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, page)
            for kind in ("mousePressed", "mouseReleased"):
                event = {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}
                await self._command("Input.dispatchMouseEvent", event, page)

    async def type_text(self, ref: str, text: str) -> None:
        """Focus ``ref``, select what it holds, and type ``text`` over it."""
        page = self.page()
        node = self._node(page, ref)
        try:
            await self._command("DOM.focus", {"backendNodeId": node}, page)
            resolved = await self._command("DOM.resolveNode", {"backendNodeId": node}, page)
        except CdpError as exc:
            raise BrowserError(f"Cannot type into {ref}: it cannot take focus ({exc}).") from exc
        await self._command(
            "Runtime.callFunctionOn", {"objectId": resolved["object"]["objectId"], "functionDeclaration": _CLEAR_FIELD}, page
        )
        await self._command("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46}, page)
        await self._command("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Delete", "code": "Delete", "windowsVirtualKeyCode": 46}, page)
        if text:
            await self._command("Input.insertText", {"text": text}, page)

    async def press(self, key: str) -> None:
        """Press ``key`` (a name such as ``Enter``, or one character) in the focused element.

        Raises:
            BrowserError: a key name this tool does not know.
        """
        page = self.page()
        if key in _KEYS:
            code, virtual, text = _KEYS[key]
        elif len(key) == 1:
            code, virtual, text = "", ord(key.upper()), key
        else:
            raise BrowserError(f"Unknown key {key!r}: use one character or one of {', '.join(_KEYS)}.")
        down = {"type": "keyDown" if text else "rawKeyDown", "key": key, "code": code, "windowsVirtualKeyCode": virtual}
        if text:
            down["text"] = text
        async with self._settling(page, f"pressing {key}"):
            await self._command("Input.dispatchKeyEvent", down, page)
            await self._command("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": virtual}, page)

    async def scroll(self, direction: str) -> None:
        """Scroll the page half a viewport ``up`` or ``down``."""
        delta = SCROLL_PIXELS if direction == "down" else -SCROLL_PIXELS
        await self.evaluate(f"window.scrollBy(0, {delta})", self.page())

    async def back(self) -> str:
        """Go back one entry in the page's history and wait for it; returns the URL.

        Raises:
            BrowserError: there is no earlier entry.
        """
        page = self.page()
        history = await self._command("Page.getNavigationHistory", {}, page)
        index = history.get("currentIndex", 0)
        if index <= 0:
            raise BrowserError("There is no earlier page in this tab's history.")
        entry = history["entries"][index - 1]
        async with self._settling(page, "going back"):
            await self._command("Page.navigateToHistoryEntry", {"entryId": entry["id"]}, page)
        return page.url or entry.get("url", "")

    async def evaluate(self, expression: str, page: _Page | None = None) -> Any:
        """The JSON value of ``expression`` evaluated in the page (promises awaited).

        Raises:
            BrowserError: the expression threw, or its value cannot be serialized.
        """
        target = page or self.page()
        with self._stopped_when_cancelled(target):
            reply = await self._command(
                "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, target
            )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            raise BrowserError(details.get("exception", {}).get("description") or details.get("text", "the expression threw"))
        return reply.get("result", {}).get("value")

    async def images(self) -> list[dict[str, Any]]:
        """The page's images: src, alt, width, height (``data:`` ones left out)."""
        found = await self.evaluate(_IMAGES, await self.settled())
        return found if isinstance(found, list) else []

    def console(self, *, clear: bool) -> list[ConsoleEntry]:
        """The current page's console lines and script errors, oldest first; ``clear`` empties the record."""
        page = self.page()
        entries = list(page.console)
        if clear:
            page.console.clear()
        return entries

    async def screenshot(self) -> bytes:
        """A PNG of the current page's viewport."""
        reply = await self._command("Page.captureScreenshot", {"format": "png"}, await self.settled())
        return base64.b64decode(reply.get("data", ""))


def _loaded(page: _Page) -> bool:
    """Whether ``page`` has finished a first load and is not loading another."""
    return bool(page.loaded) and not page.loading


def _remote_text(arg: dict[str, Any]) -> str:
    """How the console shows one argument of ``console.log``."""
    if "value" in arg:
        value = arg["value"]
        return value if isinstance(value, str) else repr(value)
    return str(arg.get("description") or arg.get("unserializableValue") or arg.get("type", ""))
