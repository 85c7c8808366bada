"""OpScheduler: the order in which a member proposes the ops its clients sent.

Each connection has a lane (its ops, and requests that must follow them, in its own
order). At most ``window`` ops of this member are proposed and unanswered at once, and
``reserve`` more for light lanes (fewer than :data:`LIGHT` ops proposed and waiting);
the rest wait in their lanes, and when room frees the lane with the fewest ops
proposed goes first, up to :data:`TURN_OPS` ops a turn. So a client with one op in
flight enters the next proposal instead of the back of what a flood queued, and the
log holds at most a window of this member's ops ahead of it; while lanes wait, the
window shrinks as far as it must for their ops to commit within the member's commit
target (:mod:`.proposal_window`).

What waits in a lane already holds its slots of the budget (memory stays bounded by
it); a lane's ops are proposed under the session they were read under, in order; ops
whose timeout passed while they waited are answered as not applied (reported to the
call observer as a :class:`QueuedTimeout`); a closed
connection's lane is dropped unproposed (its client sends them again on its next link,
under the same sequence numbers).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..raft.errors import CommitTimeout
from ..replicated import ops
from .batching import PendingOp, answer_each, client_ops, group
from .proposal_window import ProposalWindow

if TYPE_CHECKING:
    from ..node import Node
    from .access import ClientAccess
    from .connection import ClientConnection


#: Most ops of one lane proposed in one turn (so in one ``CLIENT_OPS``), and about the
#: most proposed before the loop's other work runs.
TURN_OPS = 256
#: Most lists, tuples, dicts and sets the ops of one turn hold (its first op whatever it
#: holds), and about the most proposed before the loop's other work runs: each costs the
#: proposing member about a microsecond to check and encode, so 32 ops of 65,000 empty
#: lists proposed in one step held its loop for seconds and its followers elected another.
TURN_CONTAINERS = 65_536
#: A client holding fewer slots (a lane with fewer ops proposed or waiting) is light:
#: it may use the reserves.
LIGHT = 8
#: Default share of the total budget that may be proposed and unanswered at once (a
#: smaller window shortens the log ahead of a light client's op, at the cost of the
#: flood's throughput while the CPU is short: a quarter cost 10-15% of it in runs under
#: load).
WINDOW_SHARE = 0.5
#: Share of the window, and of the budget, added for light clients.
RESERVE_SHARE = 0.125
BUDGET_RESERVE_SHARE = 0.0625
#: The smallest default window (ops).
MIN_WINDOW = 64
#: The least the window shrinks to under its commit target (ops; :mod:`.proposal_window`).
FLOOR_WINDOW = 32


def fair_budget(access: ClientAccess) -> dict[str, int]:
    """:class:`~.fair_budget.FairBudget` arguments besides the size, for ``access``."""
    size = access.max_total_in_flight
    return {"reserve": int(size * BUDGET_RESERVE_SHARE), "light": LIGHT}


def fair_window(access: ClientAccess, fsync: Callable[[], float] = lambda: 0.0
                ) -> dict[str, Any]:
    """The :class:`OpScheduler` window, its control and the reserve for a member's
    ``access``; ``fsync()`` says how long the member's last fsync took (seconds)."""
    size = access.max_total_in_flight
    window = min(size, max(MIN_WINDOW, int(size * WINDOW_SHARE)))
    control = ProposalWindow(window, FLOOR_WINDOW, access.commit_target, fsync)
    return {"window": window, "reserve": int(window * RESERVE_SHARE), "control": control}


Answer = Callable[["ClientConnection", PendingOp, Any, "BaseException | None"], None]


class QueuedTimeout(CommitTimeout):
    """A client's op whose timeout passed while it waited for its turn here, before it
    was proposed: it was not applied (the client reads a :class:`CommitTimeout`)."""


class _Lane:
    """One connection's ops waiting their turn, and how many it has proposed."""

    __slots__ = ("conn", "items", "proposed", "queued", "turn")

    def __init__(self, conn: ClientConnection) -> None:
        self.conn = conn
        #: ``(session, read at, ops)`` chunks, or a request to make once the ops before
        #: it were proposed (with what to do when it is dropped instead).
        self.items: deque[tuple[int, float, list[PendingOp]]
                          | tuple[Callable[[], None], Callable[[], None]]] = deque()
        self.proposed = 0
        self.queued = 0
        #: Its entry in the scheduler's turns (0: none).
        self.turn = 0

    @property
    def light(self) -> bool:
        return self.proposed + self.queued < LIGHT


class OpScheduler:
    """Proposes clients' ops through ``node``'s replica (module docstring).

    ``answer(conn, op, result, error)`` answers an op that was proposed (its slots are
    given back there); ``fail(conn, rid, error)`` and ``release(conn)`` answer one
    refused or expired before it was, and give its slots back.
    """

    def __init__(self, node: Node, window: int, *, reserve: int = 0, answer: Answer,
                 fail: Callable[[ClientConnection, int, BaseException], None],
                 release: Callable[[ClientConnection], None],
                 control: ProposalWindow | None = None) -> None:
        #: Sizes the window (at most ``window``; fixed there when ``None``).
        self.control = ProposalWindow(window, window, 0) if control is None else control
        self.node = node
        #: Ops beyond the window only light lanes propose (at most LIGHT each).
        self.reserve = max(0, reserve)
        self.in_window = 0
        self._answer, self._fail_op, self._release = answer, fail, release
        self._lanes: dict[ClientConnection, _Lane] = {}
        self._turns: list[tuple[int, int, _Lane]] = []
        self._order = itertools.count(1)
        self._dispatching = False
        #: Containers the ops proposed in this step of the loop hold.
        self._step_containers = 0

    @property
    def window(self) -> int:
        """Most ops proposed and unanswered at once now (besides the reserve)."""
        return self.control.size

    @property
    def waiting(self) -> int:
        """Ops read and waiting their turn."""
        return sum(lane.queued for lane in self._lanes.values())

    def _lane(self, conn: ClientConnection) -> _Lane:
        lane = self._lanes.get(conn)
        if lane is None:
            lane = self._lanes[conn] = _Lane(conn)
        return lane

    def add(self, conn: ClientConnection, session: int, pending: list[PendingOp]) -> None:
        """Queue ``pending`` (read in this order under ``session``) and propose what
        fits now."""
        lane = self._lane(conn)
        lane.items.append((session, asyncio.get_running_loop().time(), pending))
        lane.queued += len(pending)
        self._ready(lane)
        self._dispatch()

    def after(self, conn: ClientConnection, request: Callable[[], None],
              dropped: Callable[[], None]) -> bool:
        """Make ``request`` once the ops queued before it were proposed; False (nothing
        queued) when the caller should make it now. ``dropped`` runs instead when the
        connection closes first."""
        lane = self._lanes.get(conn)
        if lane is None or not lane.items:
            return False
        lane.items.append((request, dropped))
        return True

    def drop(self, conn: ClientConnection) -> None:
        """The connection closed: what waits in its lane is given up, its slots back."""
        lane = self._lanes.pop(conn, None)
        if lane is None:
            return
        items, lane.items, lane.queued = lane.items, deque(), 0
        for item in items:
            if len(item) == 2:
                item[1]()
            else:
                for _ in item[2]:
                    self._release(conn)
        self._dispatch()

    def _ready(self, lane: _Lane) -> None:
        if not lane.turn and lane.items:
            lane.turn = next(self._order)
            heapq.heappush(self._turns, (lane.proposed, lane.turn, lane))

    def _done(self, lane: _Lane, count: int, proposed_at: float) -> None:
        now = asyncio.get_running_loop().time()
        self.control.committed(now - proposed_at, now)
        self.in_window -= count
        lane.proposed -= count
        if not lane.items and not lane.proposed and self._lanes.get(lane.conn) is lane:
            del self._lanes[lane.conn]
        if self._turns:
            self._later()  # after this step's answers

    def _later(self) -> None:
        if not self._dispatching:
            self._dispatching = True
            asyncio.get_running_loop().call_soon(self._dispatch)

    def _dispatch(self) -> None:
        """Give the room to the lanes in turn, at most :data:`TURN_OPS` ops (holding
        about :data:`TURN_CONTAINERS` containers) before the loop's other work runs
        (heartbeats first)."""
        self._dispatching = False
        turns, start = self._turns, self.in_window
        while turns:
            _, turn, lane = turns[0]
            if lane.turn != turn or self._lanes.get(lane.conn) is not lane:
                heapq.heappop(turns)
                continue  # taken out of order, or dropped
            room = self.control.size - self.in_window
            if room > 0:
                if (self.in_window - start >= TURN_OPS
                        or self._step_containers >= TURN_CONTAINERS):
                    self._later()
                    return
                heapq.heappop(turns)
                self._take_turn(lane, room)
                continue
            self.control.pressed()
            if self.in_window < self.control.size + self.reserve:
                for _, turn, lane in [entry for entry in turns if entry[2].light]:
                    if lane.turn == turn and self._lanes.get(lane.conn) is lane:
                        self._take_turn(lane, 0)  # the reserve
            return

    def _take_turn(self, lane: _Lane, room: int) -> None:
        if room <= 0 and lane.light:  # the reserve, at most LIGHT ops a lane
            room = min(self.control.size + self.reserve - self.in_window,
                       LIGHT - lane.proposed)
        lane.turn = 0
        if room > 0:
            self._turn(lane, min(TURN_OPS, room))
        self._ready(lane)

    def _turn(self, lane: _Lane, room: int) -> None:
        """Propose up to ``room`` of the lane's ops (of one session), and the requests
        queued behind them that come next."""
        items, now = lane.items, asyncio.get_running_loop().time()
        taken: list[PendingOp] = []
        session = 0
        while items and (room or len(items[0]) == 2):
            head = items[0]
            if len(head) == 2:
                if taken:
                    break
                items.popleft()
                head[0]()
                continue
            if taken and head[0] != session:
                break
            session, read_at, chunk = head
            count = self._fitting(chunk, min(room, len(chunk)))
            if not count:
                break
            if count == len(chunk):
                items.popleft()
            else:
                items[0] = (session, read_at, chunk[count:])
            room -= count
            lane.queued -= count
            waited = now - read_at
            if waited < 0.001:  # proposed as read: no timeout to check
                taken += chunk if count == len(chunk) else chunk[:count]
                continue
            for op in chunk[:count]:
                if op.timeout <= waited:
                    expired = QueuedTimeout(f"{ops.op_name(op.code)} waited for its turn "
                                            "past its timeout; it was not applied",
                                            applied=False)
                    self._observe(op.code, read_at, None, expired)
                    self._fail_op(lane.conn, op.rid, expired)
                    self._release(lane.conn)
                else:
                    op.timeout -= waited
                    taken.append(op)
        if taken:
            self._propose(lane, session, taken)

    def _fitting(self, chunk: list[PendingOp], most: int) -> int:
        """How many of ``chunk``'s first ``most`` ops this step of the loop still
        proposes, counting their containers in the step's (the first op of a step
        whatever it holds; the step is full once one does not fit, and counts from 0
        again at the loop's next step)."""
        before = held = self._step_containers
        count = most
        for k in range(most):
            held += chunk[k].containers
            if held > TURN_CONTAINERS and (k or before):
                count, held = k, TURN_CONTAINERS
                break
        if held and not before:
            asyncio.get_running_loop().call_soon(self._next_step)
        self._step_containers = held
        return count

    def _next_step(self) -> None:
        self._step_containers = 0

    def _propose(self, lane: _Lane, session: int, pending: list[PendingOp]) -> None:
        """Propose ``pending`` (several ops of one group as one ``CLIENT_OPS``, see
        :mod:`.batching`); each one refused here is answered and its slots given back."""
        config = self.node.driver.replica.config
        at = asyncio.get_running_loop().time()
        for members in group(pending, message_limit=config.max_message_bytes,
                             command_bytes=config.max_command_bytes):
            self.in_window += len(members)
            lane.proposed += len(members)
            if len(members) > 1 and self._propose_ops(lane, session, members, at):
                continue
            for op in members:
                self._propose_op(lane, session, op, at)

    def _propose_ops(self, lane: _Lane, session: int, members: list[PendingOp],
                     at: float) -> bool:
        """Propose ``members`` as one ``CLIENT_OPS``; False when the replica refuses them
        together (each is then proposed alone, and refused alone)."""
        driver, conn = self.node.driver, lane.conn
        if not driver.running or driver.disk_error is not None:
            return False

        answer = answer_each(members, lambda op, result, error: self._answered(
            conn, op, at, result, error))
        count = len(members)

        def done(result: Any, error: BaseException | None) -> None:
            self._done(lane, count, at)
            answer(result, error)

        try:
            driver.replica.propose(
                ops.CLIENT_OPS, client_ops(session, members),
                timeout=max(op.timeout for op in members), on_done=done)
        except Exception:  # a value or size the replica refuses: proposed one by one
            return False
        driver.wake()
        return True

    def _propose_op(self, lane: _Lane, session: int, op: PendingOp, at: float) -> None:
        driver, conn = self.node.driver, lane.conn
        code, args = ops.CLIENT_OP, [session, op.seq, op.floor, op.code, *op.args]

        def answer(result: Any, error: BaseException | None) -> None:
            self._done(lane, 1, at)
            self._answered(conn, op, at, result, error)

        try:
            if not driver.running or driver.disk_error is not None:
                driver.propose(code, args, timeout=op.timeout)  # raises why it cannot
            driver.replica.propose(code, args, timeout=op.timeout, on_done=answer)
        except Exception as exc:  # not running, no disk, a value replicas would refuse
            self._done(lane, 1, at)
            self._observe(op.code, at, None, exc)
            self._fail_op(conn, op.rid, exc)
            self._release(conn)
            return
        driver.wake()

    def _answered(self, conn: ClientConnection, op: PendingOp, proposed_at: float,
                  result: Any, error: BaseException | None) -> None:
        self._observe(op.code, proposed_at, result, error)
        self._answer(conn, op, result, error)

    def _observe(self, code: int, proposed_at: float, result: Any,
                 error: BaseException | None) -> None:
        """Report a client's op to the driver's call observer under its own code (not
        the ``CLIENT_OP`` it was proposed in), as a member's own call reports."""
        self.node.driver.observe_call(code, asyncio.get_running_loop().time() - proposed_at,
                                      result, error)
