"""The Lua scripts of the Redis queue storage (see :mod:`.redis_scripts`)."""

from __future__ import annotations

from .redis_scripts import _NOTIFY, _TYPE_CHECK

# -- FIFO queue: KEYS list, closed flag, head version, state version, settings ----------
# The state version counts the changes of the list and flag (each pushed element, each
# pop that took something, each put-back, the close): a state read with a version at
# least a push's includes that push, so a mirror orders what it reads against its own
# pushes whose replies arrive in any order (see QueueMirror).

# The state version exists once the queue held anything, the settings once it was
# declared: either deleted outside this library while the rest remain is a half queue
# (LOST). A queue whose keys are all gone (flushed) starts afresh: a script that writes
# is given the capacity (``cap``) and declares it again.
_WHOLE_QUEUE = """
local function whole_queue(cap)
  if redis.call('EXISTS', KEYS[4]) == 0 then
    if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3]) > 0 then
      return redis.error_reply('LOST ' .. KEYS[4] .. ' (the queue state version) is gone ' ..
        'while its other keys remain')
    end
    if cap then redis.call('HSETNX', KEYS[5], 'capacity', cap) end
  elseif redis.call('EXISTS', KEYS[5]) == 0 then
    return redis.error_reply('LOST ' .. KEYS[5] .. ' (the queue settings) is gone while ' ..
      'its other keys remain')
  end
  return nil
end
"""

QUEUE_DECLARE = _TYPE_CHECK + _WHOLE_QUEUE + """
local bad = require_type(KEYS[1], 'list') or require_type(KEYS[5], 'hash')
  or whole_queue(nil)
if bad then return bad end
bad = setting(KEYS[5], 'capacity', ARGV[1])
if bad then return bad end
return 1
"""

# ARGV: capacity (-1: none), channel, then the values -> {head version, state version
# after the last value, then per value the length before it (pushed), -1 (closed) or
# -2 (full)}
QUEUE_PUSH = _NOTIFY + _WHOLE_QUEUE + """
local lost = whole_queue(ARGV[1] == '-1' and 'none' or ARGV[1])
if lost then return lost end
local out = {'0', 0}
if redis.call('EXISTS', KEYS[2]) == 1 then
  for i = 3, #ARGV do out[#out + 1] = -1 end
  return out
end
local n = redis.call('LLEN', KEYS[1])
local cap = tonumber(ARGV[1])
local head = redis.call('GET', KEYS[3]) or '0'
local pushed = 0
for i = 3, #ARGV do
  if cap >= 0 and n >= cap then
    out[#out + 1] = -2
  else
    redis.call('RPUSH', KEYS[1], ARGV[i])
    if n == 0 then head = tostring(redis.call('INCR', KEYS[3])) end
    out[#out + 1] = n
    n = n + 1
    pushed = pushed + 1
  end
end
out[1] = head
if pushed > 0 then
  out[2] = redis.call('INCRBY', KEYS[4], pushed)
else
  out[2] = tonumber(redis.call('GET', KEYS[4]) or '0')
end
if n > 0 then notify(ARGV[2]) end
return out
"""

# -> the values taken, -1 (closed and empty) or {state version} (empty)
QUEUE_POP = _NOTIFY + _WHOLE_QUEUE + """
local lost = whole_queue(nil)
if lost then return lost end
local values = redis.call('LPOP', KEYS[1], ARGV[1])
if not values then
  if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
  return {tonumber(redis.call('GET', KEYS[4]) or '0')}
end
redis.call('INCR', KEYS[3])
redis.call('INCR', KEYS[4])
notify(ARGV[2])
return values
"""

# ARGV: channel, capacity (as declared), then the values
QUEUE_UNPOP = _NOTIFY + _WHOLE_QUEUE + """
local lost = whole_queue(ARGV[2])
if lost then return lost end
for i = #ARGV, 3, -1 do redis.call('LPUSH', KEYS[1], ARGV[i]) end
redis.call('INCR', KEYS[3])
redis.call('INCR', KEYS[4])
notify(ARGV[1])
return #ARGV - 2
"""

# ARGV: channel, capacity (as declared)
QUEUE_CLOSE = _NOTIFY + _WHOLE_QUEUE + """
local lost = whole_queue(ARGV[2])
if lost then return lost end
if redis.call('SETNX', KEYS[2], 1) == 1 then
  redis.call('INCR', KEYS[4])
  notify(ARGV[1])
end
return 1
"""

QUEUE_READ = _WHOLE_QUEUE + """
local lost = whole_queue(nil)
if lost then return lost end
local n = redis.call('LLEN', KEYS[1])
local head = redis.call('GET', KEYS[3]) or '0'
return {n, redis.call('EXISTS', KEYS[2]), head,
        redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1),
        tonumber(redis.call('GET', KEYS[4]) or '0')}
"""
