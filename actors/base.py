"""The runtime's two kinds of tree member: actors that read a mailbox, jobs that return a value.

Both share one lifecycle (:class:`ActorBase`): a path in the tree, a state and
an activity, a snapshot, a cancel scope with a nursery for children (a job
whose class sets ``starts_tasks = False``: the scope alone), and shielded
cleanup. They differ in how they are used:

- an :class:`Actor` reads its mailbox until it is stopped; others hold its
  :class:`~actors.handle.ActorHandle` to tell and ask it. Start one with
  :meth:`ActorBase.spawn`.
- a :class:`~actors.job.Job` does one piece of work and returns its value:
  ``reply = await self.run_job(LlmCall(...), "llm")`` returns it, or raises
  what the job raised. The job is in the tree (state, activity, snapshot,
  killable by path) while it runs, inside its caller's cancel scope.

Writing an actor::

    class Counter(Actor[CounterMsg]):
        kind = "counter"

        def __init__(self) -> None:
            super().__init__()
            self.count = 0

        async def handle(self, message: CounterMsg) -> int:
            self.count += 1
            return self.count

Override :meth:`handle` for a plain mailbox reader, or :meth:`main` for a
loop of one's own. :meth:`on_start` runs before the actor is ready (raising
there fails the spawn), :meth:`on_stop` runs shielded after the actor's
children are gone, bounded by ``shutdown_timeout``.

Each actor runs inside its own cancel scope with a nursery for its children;
children started with :meth:`spawn` are linked: a child that fails raises
:class:`~actors.errors.ActorFailed` in its parent, unless the parent passed
``on_failure``. Supervisors (see ``supervisor.py``) catch their children's
failures and apply a policy instead. Helper tasks that are not children go
through :meth:`ActorBase.start_soon`; the nursery itself is never handed out.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, TypeVarTuple, Unpack

import trio

from actors.errors import ActorError, ActorFailed, Rejected, SpawnFailed
from actors.handle import ActorHandle
from actors.mailbox import Envelope, Mailbox
from actors.registry import ActorRegistry
from messages.paths import child_path
from messages.supervision import ActorSnapshot, ActorState, ErrorRecord

if TYPE_CHECKING:
    from actors.job import Job

__all__ = ["Actor", "ActorBase", "FailureHandler", "StartedProxy", "error_record"]

log = logging.getLogger("hermes_actors.actors")

M = TypeVar("M")
T = TypeVar("T")
#: The arguments a helper task is started with.
Ts = TypeVarTuple("Ts")

#: Called with a child that failed after it was ready, instead of failing its parent.
FailureHandler = Callable[["ActorBase", ActorFailed], None]


class ActorBase:
    """What every member of the tree has: path, lifecycle state, snapshot, children.

    Subclass :class:`Actor` or :class:`~actors.job.Job`, never this directly.
    """

    #: The kind shown in the tree (a class's default; an instance may name its own, as a supervisor does).
    kind: str = "actor"
    #: Mailbox size (actors only); a sender waits (or ``tell_nowait`` raises) beyond it.
    mailbox_capacity: ClassVar[int] = 0
    #: How long cleanup may run once the member is asked to stop (an instance may set its own).
    shutdown_timeout: float = 5.0
    #: Actors read a mailbox; jobs do not (they get their work when they are built).
    _reads_mailbox: ClassVar[bool] = False
    #: Whether the member starts helper tasks or actors (:meth:`start_soon`, :meth:`spawn`): it then runs in a
    #: nursery. One that does neither (a job that only runs child jobs, in its own task) sets it False, in its
    #: class or before it runs, and runs in its cancel scope alone: a nursery's exit is a pass through the
    #: scheduler even when it held no task.
    starts_tasks: bool = True

    __slots__ = (
        "__dict__",
        "_children",
        "_nursery",
        "_parent",
        "_registry",
        "_scope",
        "_stop_reason",
        "_stopped_event",
        "activity",
        "cancel_reason",
        "last_error",
        "mailbox",
        "ref",
        "name",
        "path",
        "restarts",
        "started_at",
        "state",
        "stopped",
    )

    def __init__(self) -> None:
        self.name = ""
        self.path = ""
        self.state = ActorState.STARTING
        self.activity = ""
        self.restarts = 0
        self.started_at = 0.0
        self.last_error: ErrorRecord | None = None
        self.cancel_reason: str | None = None
        self.mailbox: Mailbox[Any] | None = None
        self.ref: ActorHandle[Any] = ActorHandle(self)
        # Invariant: stopped is set once the task has ended; the event exists only
        # if someone waited (most actors are never waited on, and memory counts).
        self.stopped = False
        self._stopped_event: trio.Event | None = None
        self._children: dict[str, ActorBase] | None = None
        self._parent: ActorBase | None = None
        self._registry: ActorRegistry | None = None
        self._scope: trio.CancelScope | None = None
        self._nursery: trio.Nursery | _NoTasks | None = None
        # Invariant: set when a stop was requested before the scope existed.
        self._stop_reason: str | None = None

    # -- hooks for subclasses -------------------------------------------------

    async def on_start(self) -> None:
        """Runs before the member reports ready; an exception fails the start."""

    async def on_stop(self) -> None:
        """Cleanup after the member's children are gone; runs shielded, bounded
        by ``shutdown_timeout``."""

    def snapshot_details(self) -> dict[str, Any]:
        """Fields this kind of member adds to its snapshot (JSON-ready values)."""
        return {}

    # -- inspection --------------------------------------------------------------

    def statistics(self) -> ActorSnapshot:
        """A frozen snapshot of this member for the inspection commands."""
        mailbox = self.mailbox
        return ActorSnapshot(
            path=self.path,
            kind=self.kind,
            state=self.state,
            activity=self.activity,
            mailbox_used=mailbox.used if mailbox is not None else 0,
            mailbox_capacity=self.mailbox_capacity,
            restarts=self.restarts,
            started_at=self.started_at,
            last_error=self.last_error,
            cancel_reason=self.cancel_reason,
            details=self.snapshot_details(),
        )

    def children(self) -> list[ActorBase]:
        """Live children, in start order."""
        return list(self._children.values()) if self._children else []

    async def wait_stopped(self) -> None:
        """Return once the member's task has ended (cleanup included)."""
        if self.stopped:
            await trio.lowlevel.checkpoint()
            return
        if self._stopped_event is None:
            self._stopped_event = trio.Event()
        await self._stopped_event.wait()

    # -- children and helper tasks --------------------------------------------------

    async def spawn(
        self, child: Actor[Any], name: str, *, on_failure: FailureHandler | None = None
    ) -> ActorHandle[Any]:
        """Start ``child`` under this member and return its handle once it is ready.

        The child is linked: if it fails later, :class:`ActorFailed` is raised
        in this member, unless ``on_failure`` is given, which is then called
        with the child and its failure instead.

        Raises:
            SpawnFailed: the child raised before it was ready.
        """
        if on_failure is None:
            return await self._start_child(child, name, _run_linked)
        return await self._start_child(child, name, _Unlinked(on_failure))

    async def run_job(self, job: Job[T], name: str) -> T:
        """Run ``job`` as a child named ``name``, in the caller's task, and return its value.

        The job is in the tree while it runs and is cancelled with the caller's
        scope. Interrupted (``kill PATH``, :meth:`~actors.job.Job.request_stop`),
        it returns its :meth:`~actors.job.Job.interrupted` value.

        Raises:
            Exception: whatever the job raised, as itself.
            JobStopped: the job was interrupted and has no value for that case.
        """
        self._check_open()
        job._bind(self, name)
        return await job._run_to_value()

    def start_soon(
        self, fn: Callable[[Unpack[Ts]], Awaitable[object]], *args: Unpack[Ts], name: str | None = None
    ) -> None:
        """Run a helper task in this member's scope: it is cancelled when the member
        stops, and its failure fails the member. Not a child: it has no path."""
        self._check_open()
        assert self._nursery is not None
        self._nursery.start_soon(fn, *args, name=name)

    async def _start_child(
        self, child: Actor[Any], name: str, runner: Callable[..., Awaitable[None]]
    ) -> ActorHandle[Any]:
        """Bind ``child`` under this member and start ``runner(child, task_status=...)``
        for it in this member's nursery (supervisors pass their own runner)."""
        self._check_open()
        assert self._nursery is not None
        child._bind(self, name)
        try:
            handle: ActorHandle[Any] = await self._nursery.start(runner, child)
        except ActorFailed as exc:
            raise SpawnFailed(child.path, f"failed before it was ready: {exc.__cause__!r}") from exc.__cause__
        return handle

    def _check_open(self) -> None:
        if self._nursery is None:
            raise ActorError(self.path, "cannot start children before starting or after stopping")

    def _bind(self, parent: ActorBase, name: str) -> None:
        self.name = name
        self.path = child_path(parent.path, name)
        self._parent = parent
        self._registry = parent._registry

    def bind_root(self, registry: ActorRegistry, name: str = "") -> None:
        """Make this member the root of a system using ``registry``."""
        self.name = name
        self.path = name
        self._registry = registry

    def request_stop(self, reason: str, *, requested_by: str = "operator") -> None:
        """Cancel this member's scope, recording who asked and why."""
        self.cancel_reason = f"{reason} (requested by {requested_by})"
        if self.state not in (ActorState.STOPPED, ActorState.FAILED):
            self.state = ActorState.STOPPING
        if self._scope is None:
            self._stop_reason = self.cancel_reason
        else:
            self._scope.cancel(reason=self.cancel_reason)

    # -- the lifecycle -------------------------------------------------------------------

    async def main(self) -> None:
        """The member's work once it is ready (an actor's mailbox loop, a job's ``execute``)."""
        raise NotImplementedError(f"{type(self).__name__} has no main()")

    async def run(self, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        """The member's whole life: register, ``on_start``, report its handle to
        ``task_status``, :meth:`main`, then children and cleanup.

        A stop that was requested (through :meth:`request_stop`) ends it
        quietly; anything else it raises comes out as :class:`ActorFailed`.
        """
        # One frame from here to main(): an idle actor's memory is mostly its task's frames.
        registry = self._registry
        if registry is None:
            raise ActorError(self.path, "actor was never bound to a system")
        if self._reads_mailbox:
            self.mailbox = Mailbox(self.path, self.mailbox_capacity)
        registry.add(self)
        parent = self._parent
        if parent is not None:
            if parent._children is None:
                parent._children = {}
            parent._children[self.name] = self
        self.started_at = trio.current_time()
        try:
            # The nursery's scope is the member's scope: cancelling it stops the
            # member and its children, and it absorbs the cancellations it asked for.
            async with trio.open_nursery() if self.starts_tasks else _NoTasks(self.path) as nursery:
                self._nursery = nursery
                self._scope = nursery.cancel_scope
                if self._stop_reason is not None:
                    nursery.cancel_scope.cancel(reason=self._stop_reason)
                await self.on_start()
                # An actor waits for messages; a job is at work from the start.
                self.state = ActorState.IDLE if self.mailbox is not None else ActorState.BUSY
                task_status.started(self.ref)
                await self.main()
                # The member chose to end: its children end with it.
                nursery.cancel_scope.cancel(reason=f"{self.path} finished")
        except BaseException as exc:
            self._record_exit(exc)
            boxed = self._boxed(exc)
            if boxed is exc:
                raise
            raise boxed  # noqa: B904 - its __cause__ is the original failure
        finally:
            self._nursery = None
            if self.mailbox is not None:
                self.mailbox.close()
            await self._cleanup()
            registry.remove(self)
            siblings = parent._children if parent is not None else None
            if siblings is not None and siblings.get(self.name) is self:
                del siblings[self.name]
            self.stopped = True
            if self._stopped_event is not None:
                self._stopped_event.set()
        if self.state is not ActorState.FAILED:
            self.state = ActorState.STOPPED

    async def _cleanup(self) -> None:
        if type(self).on_stop is ActorBase.on_stop:
            return  # nothing to clean up: no shielded deadline scope (jobs end by the thousand)
        with trio.move_on_after(self.shutdown_timeout, shield=True) as scope:
            try:
                await self.on_stop()
            except Exception as exc:
                log.error("actor %s: cleanup failed: %r", self.path, exc, exc_info=exc)
                self.last_error = error_record(exc)
        if scope.cancelled_caught:
            log.error("actor %s: cleanup exceeded %.1fs and was abandoned", self.path, self.shutdown_timeout)

    def _record_exit(self, exc: BaseException) -> None:
        failure = _without_cancelled(exc)
        if failure is None:
            self.state = ActorState.STOPPED
            return
        self.state = ActorState.FAILED
        self.last_error = error_record(failure)
        if not isinstance(failure, ActorFailed):
            log.error("actor %s failed: %s", self.path, _one_line(failure), exc_info=failure)

    def _boxed(self, exc: BaseException) -> BaseException:
        failure = _without_cancelled(exc)
        if failure is None:
            return exc
        boxed = ActorFailed(self.path, f"{type(failure).__name__}: {_one_line(failure)}")
        boxed.__cause__ = failure
        return boxed


class Actor(ActorBase, Generic[M]):
    """A long-lived member of the tree that reads one mailbox of ``M`` messages."""

    #: Mailbox size; a sender waits (or ``tell_nowait`` raises) beyond it.
    mailbox_capacity: ClassVar[int] = 16
    _reads_mailbox = True

    __slots__ = ()

    if TYPE_CHECKING:
        mailbox: Mailbox[M]
        ref: ActorHandle[M]

    async def handle(self, message: M) -> Any:
        """Handle one message; the return value answers an ask.

        Raise :class:`~actors.errors.Rejected` to answer an ask with an error
        and keep running; any other exception fails the actor.
        """
        raise NotImplementedError(f"{type(self).__name__} handles no messages")

    async def main(self) -> None:
        """The actor's loop. By default: read the mailbox, :meth:`handle` each
        message, answer asks; return when the mailbox is closed."""
        mailbox = self.mailbox
        while True:
            self.state = ActorState.IDLE
            try:
                item = await mailbox.get()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                return
            await self.serve_item(item)

    async def serve_item(self, item: M | Envelope[M]) -> None:
        """Handle one mailbox item and answer it if it is an ask (for a ``main`` of one's own)."""
        self.state = ActorState.BUSY
        # A tell puts the message itself in the mailbox; only an ask wraps it.
        if type(item) is Envelope:
            message, reply = item.message, item.reply
        else:
            message, reply = item, None
        try:
            result = await self.handle(message)
        except Rejected as refusal:
            if reply is not None:
                reply.fail(refusal.error)
            else:
                log.warning("actor %s refused %s: %s", self.path, type(message).__name__, refusal.error)
            return
        except Exception as exc:
            if reply is not None:
                failure = ActorFailed(self.path, f"failed handling {type(message).__name__}")
                failure.__cause__ = exc
                reply.fail(failure)
            raise
        except BaseException:
            if reply is not None:
                reply.close()
            raise
        if reply is not None:
            reply.send(result)


class _NoTasks:
    """What a member whose class says ``starts_tasks = False`` runs in instead of a nursery: a cancel scope
    that refuses helper tasks and actors (with no schedule point on the way out, as a nursery's exit has)."""

    __slots__ = ("_path", "cancel_scope")

    def __init__(self, path: str) -> None:
        self._path = path
        self.cancel_scope = trio.CancelScope()

    async def __aenter__(self) -> _NoTasks:
        self.cancel_scope.__enter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool:
        return self.cancel_scope.__exit__(*exc_info)

    def start_soon(self, *_: Any, **__: Any) -> None:
        """Refused: the member's class says it starts no tasks.

        Raises:
            ActorError: always.
        """
        raise ActorError(self._path, "starts no helper tasks or actors (its class sets starts_tasks = False)")

    async def start(self, *_: Any, **__: Any) -> Any:
        """Refused, as :meth:`start_soon`.

        Raises:
            ActorError: always.
        """
        self.start_soon()


async def _run_linked(child: Actor[Any], *, task_status: trio.TaskStatus[Any]) -> None:
    await child.run(task_status=task_status)


class StartedProxy:
    """Forwards ``task_status.started`` and remembers that the child got there,
    so a runner can tell a failed start from a failure after ready."""

    __slots__ = ("_inner", "was_started")

    def __init__(self, inner: trio.TaskStatus[Any]) -> None:
        self._inner = inner
        self.was_started = False

    def started(self, value: Any = None) -> None:
        """Report the child ready to whoever started it."""
        self.was_started = True
        self._inner.started(value)


class _Unlinked:
    """A child runner that hands a failure after ready to a handler instead of raising."""

    __slots__ = ("_on_failure",)

    def __init__(self, on_failure: FailureHandler) -> None:
        self._on_failure = on_failure

    async def __call__(self, child: Actor[Any], *, task_status: trio.TaskStatus[Any]) -> None:
        proxy = StartedProxy(task_status)
        try:
            await child.run(task_status=proxy)
        except ActorFailed as exc:
            if not proxy.was_started:
                raise
            self._on_failure(child, exc)


def _without_cancelled(exc: BaseException) -> BaseException | None:
    """The part of ``exc`` that is not cancellation, unwrapped when single."""
    if isinstance(exc, trio.Cancelled):
        return None
    if isinstance(exc, BaseExceptionGroup):
        _, rest = exc.split(trio.Cancelled)
        if rest is None:
            return None
        while isinstance(rest, BaseExceptionGroup) and len(rest.exceptions) == 1:
            rest = rest.exceptions[0]
        return rest
    return exc


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def error_record(exc: BaseException) -> ErrorRecord:
    """Flatten an exception for snapshots: type, message, traceback text, time."""
    try:
        now = trio.current_time()
    except RuntimeError:
        now = 0.0
    return ErrorRecord(
        type=type(exc).__name__,
        message=str(exc),
        traceback="".join(traceback.format_exception(exc)),
        at=now,
    )
