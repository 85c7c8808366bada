"""How a NATS work queue declares what it stands on: its work-queue stream, its
dead-letter stream and its consumer ``lq``, each added or checked, and what follows when
the consumer is found gone (this process's leases are void)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import nats.js.errors as jserr
from nats.js.api import ConsumerConfig, RetentionPolicy, StorageType

from .errors import IncompatibleBrokerObject
from .nats_consumer_settings import PUT_BACK, declared_problem, put_back
from .nats_limits import silent_deletions
from .nats_streams import StreamDeclared

if TYPE_CHECKING:
    from .nats_leases import Leases

log = logging.getLogger(__name__)
#: The durable pull consumer every worker of a work queue shares.
CONSUMER = "lq"


class WorkDeclaration(StreamDeclared):
    """Mixed into :class:`~.nats_work.NatsWorkQueueStorage` (before its mirror class),
    which sets these up."""

    if TYPE_CHECKING:
        name: str
        stream: str
        subject: str
        dead_stream: str
        dead_subject: str
        notices: str
        _leases: Leases
        _settings: dict[str, Any]
        _subscribed: bool

        def _changed(self) -> None: ...

        def redeclare(self) -> None: ...

    async def _stream(self, name: str, subject: str, retention: RetentionPolicy,
                      kind: str) -> Any:
        """The info of stream ``name``, added or checked."""
        b = self._backend
        info = await b.stream(name, holds=(kind, self.name), subjects=[subject],
                              again=self._created is not None,
                              retention=retention, storage=StorageType.FILE,
                              allow_direct=True)
        if info.config.retention != retention or info.config.subjects != [subject]:
            raise IncompatibleBrokerObject(
                f"nats at {b.address}: stream {name} exists with retention "
                f"{info.config.retention} and subjects {info.config.subjects}; this work "
                f"queue needs {retention} on [{subject}]")
        deleting = (silent_deletions(info.config, name, "this work queue")
                    if retention == RetentionPolicy.WORK_QUEUE else None)  # dead letters age
        if deleting is not None:
            raise IncompatibleBrokerObject(f"nats at {b.address}: {deleting}")
        return info

    async def _declare(self) -> None:
        b = self._backend
        async with b.errors(f"declaring work queue {self.stream}"):
            self._created = (await self._stream(
                self.stream, self.subject, RetentionPolicy.WORK_QUEUE, "work queue")).created
            self._leases.stream(self._created)
            await self._stream(self.dead_stream, self.dead_subject, RetentionPolicy.LIMITS,
                               "work queue dead letters")
            seen = self._leases.seen()
            try:
                have = await b.js.consumer_info(self.stream, CONSUMER)
                self._leases.counted(have, seen)
            except jserr.NotFoundError:
                self._leases.void()  # a new consumer holds none of this process's leases
                have = await b.js.add_consumer(self.stream, ConsumerConfig(
                    durable_name=CONSUMER, **self._settings, **PUT_BACK))
            problem = declared_problem(have.config, self.stream, "this work queue",
                                       self._settings)
            if problem is not None:
                raise IncompatibleBrokerObject(f"nats at {b.address}: {problem}")
            await put_back(b.js, self.stream, have.config)
            if self._subscribed:
                return
            self._subscribed = True
            for subject in (self.subject, self.dead_subject, self.notices,
                            f"$JS.EVENT.ADVISORY.CONSUMER.*.{self.stream}.*"):
                await b.subscribe(subject, self._changed)
            await b.subscribe(f"$JS.EVENT.ADVISORY.CONSUMER.DELETED.{self.stream}.{CONSUMER}",
                              self._deleted)
            # The stream changed (a limit set that would delete items), announced or while
            # disconnected: its settings are checked again, as where it is opened.
            await b.watch_stream(self.stream, self.redeclare)

    async def _declare_again(self) -> None:
        """Declare the work queue again, its consumer gone: this process's leases went
        with it (their items are delivered again, as after a lease expires)."""
        log.warning("%r: consumer %s of stream %s is gone (deleted outside this library); "
                    "declaring the work queue again: its leases are void", self, CONSUMER,
                    self.stream)
        self._leases.void()
        self._declared.forget()
        await self._declared.ensure()

    def _deleted(self) -> None:
        """The server announced the consumer's deletion: the leases went with it."""
        self._leases.void(f"consumer {self._leases.consumer} was deleted")
        self._changed()
