"""What reaches a driver from its network: Raft frames (decoded and handed to the
replica; a malformed one closes its link, and while the journal cannot be written they
are dropped), the end of a run of them (a step now or soon) and links going up or down."""

from __future__ import annotations

import logging
from collections.abc import Callable

from .codec import FrameError, decode_frame
from .network import RaftNetwork
from .pipeline import CommitPipeline
from .replica import Replica

log = logging.getLogger(__name__)


class Incoming:
    """The receiving half of :class:`~.driver.Driver` (which sets these up)."""

    replica: Replica
    network: RaftNetwork
    pipeline: CommitPipeline
    #: Frames dropped because the journal could not be written.
    stalled_frames: int
    #: Frames (or messages in them) refused as malformed.
    bad_frames: int
    _frame_bytes: int
    #: Peer id -> ``_clock()`` when its last frame arrived or its link came up.
    _heard: dict[str, float]
    _clock: Callable[[], float]
    _input: bool
    _running: bool
    _publishing: bool

    def wake(self) -> None:
        raise NotImplementedError

    def _step(self) -> None:
        raise NotImplementedError

    def _on_frame(self, peer: str, frame: bytes) -> None:
        if self.pipeline.stall is not None:
            self.stalled_frames += 1
            return
        try:
            messages = decode_frame(frame, self._frame_bytes)
        except FrameError as exc:
            self.bad_frames += 1
            self.network.close_peer(peer, f"malformed Raft frame: {exc}")
            return
        self._heard[peer] = self._clock()
        for message in messages:
            try:
                self.replica.receive(peer, message)
            except Exception:
                self.bad_frames += 1
                log.exception("node %s: message from %s failed; link closed",
                              self.replica.node_id, peer)
                self.network.close_peer(peer, "a message could not be processed")
                break
        self._input = True

    def _on_frames(self, now: bool) -> None:
        """A run of frames was handed over: step now (``now``) unless a commit publication
        is pending, which steps after the callers whose operations the last step
        completed (replies that arrive together cost one more step, and what those
        callers propose joins it); else in the loop's next iteration."""
        if not self._input or not self._running:
            return
        if now and not self._publishing:
            self._step()
        elif not self._publishing:
            self.wake()

    def _on_peer(self, peer: str, up: bool) -> None:
        if up:  # a peer's silence counts from its link's start
            self._heard[peer] = self._clock()
        self.replica.peer_connected(peer, up)
        self.wake()
