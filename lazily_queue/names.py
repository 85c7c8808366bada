"""The limits on objects' names and on how many objects a cluster holds.

A queue, topic or work queue name is a non-empty ``str`` of at most
:data:`MAX_NAME_LENGTH` characters (a consumer group's work queue name,
``"<topic>:<group>"``, included). The rule is checked where names enter: a node's and a
client's cell accessors, a member serving a client's op or watch, and the admin API.

A topic's subscriber and a work queue's worker are named under the same length rule
(a ``str`` of at most :data:`MAX_NAME_LENGTH` characters) where a name is recorded: a
node's and a client's subscribe and claim, and a member serving a client's subscribe or
claim, and a deletion of a subscriber (an empty one stays accepted, as the state machine
accepts it).

A cluster holds at most ``max_objects`` queues, topics and work queues together (a
member's option, :data:`DEFAULT_MAX_OBJECTS` by default). The member proposing an op
that would create an object checks the count it has applied; the replicated state
machine does not, so members that propose new objects at the same moment can overshoot
the cap by the ones in flight: it bounds growth, it is not an exact count. A topic holds
at most ``max_subscribers`` subscriptions, durable and ephemeral (a member's option,
:data:`DEFAULT_MAX_SUBSCRIBERS` by default), checked the same way by the member proposing
a new one, and as approximate under concurrent subscribes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.groups import SEPARATOR
from .errors import (
    InvalidConfiguration,
    InvalidName,
    TooManyObjects,
    TooManySubscribers,
    shown,
)
from .replicated import ops

if TYPE_CHECKING:
    from .replicated.view import ReadView

#: Most characters in an object's name.
MAX_NAME_LENGTH = 1024
#: Objects (queues, topics and work queues together) a cluster holds by default.
DEFAULT_MAX_OBJECTS = 100_000
#: Subscriptions (durable and ephemeral) one topic holds by default.
DEFAULT_MAX_SUBSCRIBERS = 10_000

#: The ops that create the object they name when it does not exist, by the kind created.
CREATES: dict[int, str] = {
    **dict.fromkeys((ops.QUEUE_DECLARE, ops.QUEUE_DECLARE_LIMITED), "queue"),
    **dict.fromkeys((ops.TOPIC_DECLARE, ops.TOPIC_DECLARE_LIMITED, ops.TOPIC_RESTORE),
                    "topic"),
    **dict.fromkeys((ops.WORK_DECLARE, ops.WORK_DECLARE_RETRY, ops.WORK_DECLARE_LIMITED,
                     ops.WORK_DECLARE_OPTIONS, ops.GROUP_DECLARE), "work_queue"),
}


def name_problem(name: Any, what: str = "name") -> str | None:
    """Why ``name`` is not a valid object name; ``None`` when it is."""
    if not isinstance(name, str) or not name:
        return f"{what} must be a non-empty string, not {shown(name)}"
    if len(name) > MAX_NAME_LENGTH:
        return (f"{what} {shown(name)} has {len(name)} characters, over the limit of "
                f"{MAX_NAME_LENGTH} characters")
    return _text_problem(name, what)


def check_name(name: Any, what: str = "name") -> str:
    """``name`` if it is a valid object name, else raise :class:`InvalidName`."""
    problem = name_problem(name, what)
    if problem is not None:
        raise InvalidName(problem)
    return str(name)


def check_positive(value: Any, what: str) -> int:
    """``value`` as the setting ``what``, an int >= 1, else raise
    ``InvalidConfiguration``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfiguration(f"{what} must be an int >= 1, not {shown(value)}")
    return value


def check_max_objects(value: Any, what: str = "max_objects") -> int:
    """``value`` as a member's ``max_objects`` (or cap ``what``), else raise
    ``InvalidConfiguration``."""
    return check_positive(value, what)


#: The ops recording the subscriber (``args[1]``) they name when it is new.
SUBSCRIBES = frozenset({ops.TOPIC_SUBSCRIBE, ops.TOPIC_SUBSCRIBE_AT,
                        ops.TOPIC_SUBSCRIBE_AT_TIME})
#: The ops leasing items to the worker (``args[1]``) they name.
CLAIMS = frozenset({ops.WORK_CLAIM, ops.WORK_CLAIM_MANY})


def member_problem(name: Any, what: str) -> str | None:
    """Why a subscriber's or worker's name ``name`` is over the length rule; ``None``
    otherwise (a name that is not a ``str`` is the state machine's to refuse)."""
    if isinstance(name, str) and len(name) > MAX_NAME_LENGTH:
        return (f"{what} {shown(name)} has {len(name)} characters, over the limit of "
                f"{MAX_NAME_LENGTH} characters")
    return _text_problem(name, what) if isinstance(name, str) else None


def _text_problem(name: str, what: str) -> str | None:
    """Why ``name`` cannot be stored (a lone surrogate is no Unicode text); ``None``."""
    if name.isascii():
        return None
    try:
        name.encode()
    except UnicodeEncodeError:
        return f"{what} {shown(name)} is not valid Unicode text (a lone surrogate)"
    return None


def check_member(name: Any, what: str) -> None:
    """Raise :class:`InvalidName` when a subscriber's or worker's name is too long."""
    problem = member_problem(name, what)
    if problem is not None:
        raise InvalidName(problem)


def check_named_member(name: Any, what: str) -> str:
    """``name`` if it is a non-empty subscriber or worker name within the length rule
    (a broker names a consumer after it), else raise :class:`InvalidName`."""
    if not isinstance(name, str) or not name:
        raise InvalidName(f"{what} must be a non-empty string, not {shown(name)}")
    check_member(name, what)
    return name


def op_member_problem(code: int, args: list[Any]) -> str | None:
    """Why a subscribe's subscriber or a claim's worker breaks the length rule."""
    if len(args) < 2:
        return None
    if code in SUBSCRIBES or code == ops.TOPIC_DELETE_SUBSCRIBER:
        return member_problem(args[1], "subscriber name")
    if code in CLAIMS:
        return member_problem(args[1], "worker name")
    return None


def subscriber_room_problem(view: ReadView, topic: str, subscriber: str,
                            max_subscribers: int) -> str | None:
    """Why subscribing ``subscriber`` to ``topic`` would exceed ``max_subscribers``;
    ``None`` when it is subscribed already, the topic is unknown here, or there is room."""
    core = view.topic(topic)
    if core is None or core.cursor(subscriber) is not None:
        return None
    count = core.subscription_count()
    if count < max_subscribers:
        return None
    return (f"cannot subscribe {shown(subscriber)} to topic {shown(topic)}: it has {count} "
            f"subscriptions, its limit is max_subscribers={max_subscribers}; delete "
            "subscribers no longer used (`await topic.delete_subscriber(id)`; an operator: "
            "`lazily-queue queue delete-subscriber TOPIC ID` or the status page), or raise "
            "max_subscribers (the node option, or "
            "`max_subscribers` in the node's configuration file) on the members")


def op_subscriber_room_problem(view: ReadView, code: int, args: list[Any],
                               max_subscribers: int) -> str | None:
    """Why op ``code`` would subscribe beyond ``max_subscribers``; ``None`` when it
    subscribes nobody new or there is room."""
    if code not in SUBSCRIBES or len(args) < 2:
        return None
    topic, subscriber = args[0], args[1]
    if not isinstance(topic, str) or not isinstance(subscriber, str):
        return None  # the name rule (or the state machine) refuses it
    return subscriber_room_problem(view, topic, subscriber, max_subscribers)


def op_cap_refusal(view: ReadView, code: int, args: list[Any], max_objects: int | None,
                   max_subscribers: int | None) -> Exception | None:
    """The error refusing op ``code`` for creating an object beyond ``max_objects`` or a
    subscription beyond ``max_subscribers`` (``None``: that cap is not checked)."""
    if max_objects is not None:
        problem = op_room_problem(view, code, args, max_objects)
        if problem is not None:
            return TooManyObjects(f"{problem}; nothing was applied", limit=max_objects)
    if max_subscribers is not None:
        problem = op_subscriber_room_problem(view, code, args, max_subscribers)
        if problem is not None:
            return TooManySubscribers(f"{problem}; nothing was applied",
                                      limit=max_subscribers)
    return None


def check_subscriber_room(view: ReadView, topic: str, subscriber: str,
                          max_subscribers: int) -> None:
    """Raise :class:`TooManySubscribers` when a new subscription would exceed the cap."""
    problem = subscriber_room_problem(view, topic, subscriber, max_subscribers)
    if problem is not None:
        raise TooManySubscribers(problem, limit=max_subscribers)


def op_names(code: int, args: list[Any]) -> list[tuple[str, Any]]:
    """The object names op ``code`` carries in ``args``, each with what it names."""
    if not args:
        return []
    if code == ops.GROUP_DECLARE:
        if len(args) < 2 or not isinstance(args[0], str) or not isinstance(args[1], str):
            return [("topic name", args[0])]
        return [("topic name", args[0]),
                ("consumer group's name", f"{args[0]}{SEPARATOR}{args[1]}")]
    if code == ops.TXN:
        return [("name", op[1]) for op in args if isinstance(op, list) and len(op) >= 2]
    return [("name", args[0])]


def op_name_problem(code: int, args: list[Any]) -> str | None:
    """Why an op's names break the name rule; ``None`` when they do not."""
    for what, name in op_names(code, args):
        problem = name_problem(name, what)
        if problem is not None:
            return problem
    return None


def object_count(view: ReadView) -> int:
    """The queues, topics and work queues applied in ``view``."""
    return len(view.queues) + len(view.topics) + len(view.work_queues)


def exists(view: ReadView, kind: str, name: str) -> bool:
    """Whether object ``name`` of ``kind`` is applied in ``view``."""
    found = (view.queues if kind == "queue" else view.topics if kind == "topic"
             else view.work_queues)
    return name in found


def room_problem(view: ReadView, kind: str, name: str, max_objects: int) -> str | None:
    """Why a new object ``name`` of ``kind`` would exceed ``max_objects``; ``None`` when
    it exists or there is room."""
    if exists(view, kind, name):
        return None
    count = object_count(view)
    if count < max_objects:
        return None
    return (f"cannot create {kind.replace('_', ' ')} {shown(name)}: the cluster holds "
            f"{count} objects, its limit is max_objects={max_objects}; delete unused "
            "queues, topics or work queues, or raise max_objects (the node option, or "
            "`max_objects` in the node's configuration file) on the members")


def op_room_problem(view: ReadView, code: int, args: list[Any],
                    max_objects: int) -> str | None:
    """Why op ``code`` would create an object beyond ``max_objects``; ``None`` when it
    creates none or there is room."""
    kind = CREATES.get(code)
    if kind is None or not args:
        return None
    names = op_names(code, args)
    name = names[-1][1]
    if not isinstance(name, str):
        return None  # the name rule (or the state machine) refuses it
    return room_problem(view, kind, name, max_objects)


def check_room(view: ReadView, kind: str, name: str, max_objects: int) -> None:
    """Raise :class:`TooManyObjects` when a new object ``name`` would exceed the cap."""
    problem = room_problem(view, kind, name, max_objects)
    if problem is not None:
        raise TooManyObjects(problem, limit=max_objects)

