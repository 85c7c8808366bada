"""The Lua scripts of the Redis backend's exactly-once pushes (capability ``dedup``).

Each is a push script run for one value, guarded by the message id's own key (the last
of ``KEYS``; the window in milliseconds is the last of ``ARGV``): while that key lives,
the push applies nothing and answers ``{1, what the first push recorded}``; otherwise
the push runs and answers ``{0, its own result}``, and a push that applied sets the key,
expiring after the window. A refused push (closed, full) sets nothing.
"""

from __future__ import annotations

from ..core.dedup import DEFAULT_MAX_AGE
from . import redis_queue_scripts, redis_scripts, redis_topic_scripts

#: How long a producer's ``msg_id`` is remembered (the dedup window, by age only).
ONCE_WINDOW_MS = int(DEFAULT_MAX_AGE * 1000)


def _once(push: str, kept: str) -> str:
    """``push`` (a script that starts with the notify helper) guarded as above; ``kept``
    is a Lua expression of ``result``: what a repeat is answered, ``nil`` when refused."""
    body = push.removeprefix(redis_scripts._NOTIFY)
    return redis_scripts._NOTIFY + """
local once = KEYS[#KEYS]
local seen = redis.call('GET', once)
if seen then return {1, seen} end
local window = table.remove(ARGV)
local function push()
""" + body + """
end
local result = push()
if type(result) == 'table' and result.err then return result end
local kept = """ + kept + """
if kept then redis.call('SET', once, kept, 'PX', window) end
return {0, result}
"""


# {head version, state version, the length before the value or -1 (closed) or -2 (full)}
QUEUE_PUSH_ONCE = _once(redis_queue_scripts.QUEUE_PUSH, "result[3] >= 0 and '1' or nil")
# {offset}
TOPIC_PUBLISH_ONCE = _once(redis_topic_scripts.TOPIC_PUBLISH, "result[1]")
# {the count put back}: a cancelled pop's put-back, sent again under its own key until
# one attempt applies (see RedisQueueStorage)
QUEUE_UNPOP_ONCE = _once(redis_queue_scripts.QUEUE_UNPOP, "'1'")
# {entry id}
WORK_PUSH_ONCE = _once(redis_scripts.WORK_PUSH, "result[1]")
