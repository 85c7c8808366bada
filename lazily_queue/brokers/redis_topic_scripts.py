"""The Lua scripts of the Redis topic storage (see :mod:`.redis_scripts`)."""

from __future__ import annotations

from .redis_scripts import _NOTIFY, _TYPE_CHECK

# -- topic: KEYS stream, subscriptions hash, meta hash (base, end) --------------------------

# The meta hash exists once the topic was declared (or its keys, all gone, were made
# again by a publish or subscribe): one deleted outside this library while the stream or
# the subscriptions remain is a half topic (LOST), its offsets gone.
_WHOLE_TOPIC = """
local function whole_topic(make)
  if redis.call('EXISTS', KEYS[3]) == 1 then return nil end
  if redis.call('EXISTS', KEYS[1], KEYS[2]) > 0 then
    return redis.error_reply('LOST ' .. KEYS[3] .. ' (the topic base and end offsets) is ' ..
      'gone while its stream or subscriptions remain')
  end
  if make then redis.call('HSET', KEYS[3], 'base', 0, 'end', 0) end
  return nil
end
"""

# An entry another program added to the stream (XADD) is an element at its position:
# the end offset follows the stream when it holds more entries than the offsets count.
_FOREIGN = """
local function adopt(stream, meta_key)
  local base = tonumber(redis.call('HGET', meta_key, 'base') or '0')
  local length = redis.call('XLEN', stream)
  if base + length > tonumber(redis.call('HGET', meta_key, 'end') or '0') then
    redis.call('HSET', meta_key, 'end', base + length)
  end
end
"""

_SUBS = _FOREIGN + """
local function record(subs, id)
  local raw = redis.call('HGET', subs, id)
  if not raw then return nil end
  local d, c, cursor = string.match(raw, '^(%a+)|([01])|(%d+)$')
  if not d then return nil end  -- not a record (another program's): no subscription
  return {d, c == '1', tonumber(cursor)}
end
local function store(subs, id, rec)
  redis.call('HSET', subs, id, rec[1] .. '|' .. (rec[2] and '1' or '0') .. '|' .. rec[3])
end
local function meta(key, field) return tonumber(redis.call('HGET', key, field) or '0') end
-- the log is whole: the stream holds one entry per offset from base to end (a stream
-- deleted or trimmed outside this library is not)
local function whole_log(stream, base, last)
  if redis.call('XLEN', stream) ~= last - base then
    return redis.error_reply('LOST ' .. stream .. ' holds ' .. redis.call('XLEN', stream) ..
      ' entries where offsets ' .. base .. '..' .. last .. ' need ' .. (last - base))
  end
  return nil
end
-- set group s:<id> at entry id position, made again when it is gone (destroyed outside
-- this library: its position is the record's cursor, so it is the same group)
local function set_group(stream, id, position)
  if redis.pcall('XGROUP', 'SETID', stream, 's:' .. id, position)['err'] then
    redis.call('XGROUP', 'CREATE', stream, 's:' .. id, position)
  end
end
-- the id of the entry at offset cursor - 1 ('0-0' at the base)
local function before(stream, cursor, base)
  if cursor <= base then return '0-0' end
  local read = redis.call('XRANGE', stream, '-', '+', 'COUNT', cursor - base)
  return read[#read][1]
end
"""

TOPIC_DECLARE = _TYPE_CHECK + _WHOLE_TOPIC + """
local bad = require_type(KEYS[1], 'stream') or require_type(KEYS[2], 'hash')
  or require_type(KEYS[3], 'hash')
-- no write for a topic that exists (declared while the server is past maxmemory)
  or whole_topic(true)
if bad then return bad end
return 1
"""

# ARGV: channel, then the values -> their offsets
TOPIC_PUBLISH = _NOTIFY + _WHOLE_TOPIC + _FOREIGN + """
local lost = whole_topic(true)
if lost then return lost end
adopt(KEYS[1], KEYS[3])
local offsets = {}
for i = 2, #ARGV do
  redis.call('XADD', KEYS[1], '*', 'v', ARGV[i])
  offsets[#offsets + 1] = redis.call('HINCRBY', KEYS[3], 'end', 1) - 1
end
notify(ARGV[1])
return offsets
"""

# ARGV: subscriber, durability, channel
TOPIC_SUBSCRIBE = _NOTIFY + _SUBS + _WHOLE_TOPIC + """
local lost = whole_topic(true)
if lost then return lost end
adopt(KEYS[1], KEYS[3])
local id = ARGV[1]
local rec = record(KEYS[2], id)
if rec then
  if rec[2] then return 'AlreadyConnected' end
  rec[2] = true
  store(KEYS[2], id, rec)
  notify(ARGV[3])
  return 'Reconnected'
end
local made = redis.pcall('XGROUP', 'CREATE', KEYS[1], 's:' .. id, '$', 'MKSTREAM')
if type(made) == 'table' and made.err then
  redis.call('XGROUP', 'SETID', KEYS[1], 's:' .. id, '$')
end
store(KEYS[2], id, {ARGV[2], true, meta(KEYS[3], 'end')})
notify(ARGV[3])
return 'Subscribed'
"""

# ARGV: subscriber, 'connect' | 'disconnect', channel
TOPIC_CONNECTION = _NOTIFY + _SUBS + _WHOLE_TOPIC + """
local lost = whole_topic(false)
if lost then return lost end
local id = ARGV[1]
local rec = record(KEYS[2], id)
local want = ARGV[2] == 'connect'
if not rec or rec[2] == want then return 0 end
if not want and rec[1] == 'ephemeral' then
  redis.call('HDEL', KEYS[2], id)
  redis.pcall('XGROUP', 'DESTROY', KEYS[1], 's:' .. id)
else
  rec[2] = want
  store(KEYS[2], id, rec)
end
notify(ARGV[3])
return 1
"""

# ARGV: subscriber, target offset (-1: one element), channel -> {cursor, last value} | -1
TOPIC_ADVANCE = _NOTIFY + _SUBS + _WHOLE_TOPIC + """
local lost = whole_topic(false)
if lost then return lost end
local id = ARGV[1]
local rec = record(KEYS[2], id)
if not rec or not rec[2] then return -1 end
adopt(KEYS[1], KEYS[3])
local last = meta(KEYS[3], 'end')
local target = tonumber(ARGV[2])
if target < 0 then target = rec[3] + 1 end
if target > last then target = last end
if target <= rec[3] then return {rec[3], false} end
local function read_group()
  return redis.pcall('XREADGROUP', 'GROUP', 's:' .. id, 'lq', 'COUNT', target - rec[3],
                     'NOACK', 'STREAMS', KEYS[1], '>')
end
local read = read_group()
if type(read) == 'table' and read['err'] then
  if not string.find(read['err'], 'NOGROUP') then return read end
  local base = meta(KEYS[3], 'base')
  local lost = whole_log(KEYS[1], base, last)
  if lost then return lost end
  set_group(KEYS[1], id, before(KEYS[1], rec[3], base))
  read = redis.call('XREADGROUP', 'GROUP', 's:' .. id, 'lq', 'COUNT', target - rec[3],
                    'NOACK', 'STREAMS', KEYS[1], '>')
end
local value = false
if read then
  local entries = read[1][2]
  local fields = entries[#entries][2]
  value = ''  -- an entry without one (another program's) is an undecodable element
  for i = 1, #fields, 2 do if fields[i] == 'v' then value = fields[i + 1] end end
end
rec[3] = target
store(KEYS[2], id, rec)
notify(ARGV[3])
return {target, value}
"""

TOPIC_GC = _NOTIFY + _SUBS + _WHOLE_TOPIC + """
local lost = whole_topic(false)
if lost then return lost end
adopt(KEYS[1], KEYS[3])
local base, last = meta(KEYS[3], 'base'), meta(KEYS[3], 'end')
local frontier = nil
local subs = redis.call('HGETALL', KEYS[2])
for i = 1, #subs, 2 do
  local rec = record(KEYS[2], subs[i])
  -- a field that is not a record (another program's) is no subscription
  if rec and rec[1] == 'durable' and (frontier == nil or rec[3] < frontier) then
    frontier = rec[3]
  end
end
if frontier == nil then frontier = last end
local removed = frontier - base
if removed <= 0 then return 0 end
local lost = whole_log(KEYS[1], base, last)
if lost then return lost end
local doomed = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', removed)
local edge = doomed[#doomed][1]
local keep = redis.call('XRANGE', KEYS[1], '(' .. edge, '+', 'COUNT', 1)
if keep[1] then
  redis.call('XTRIM', KEYS[1], 'MINID', keep[1][1])
else
  redis.call('XTRIM', KEYS[1], 'MAXLEN', 0)
end
for i = 1, #subs, 2 do
  local rec = record(KEYS[2], subs[i])
  if rec and rec[3] < frontier then
    rec[3] = frontier
    store(KEYS[2], subs[i], rec)
    set_group(KEYS[1], subs[i], edge)
  end
end
redis.call('HSET', KEYS[3], 'base', frontier)
notify(ARGV[1])
return removed
"""

# ARGV: last id known to the mirror ('-' for none) -> {base, end, subs, new entries}
TOPIC_READ = _WHOLE_TOPIC + """
local lost = whole_topic(false)
if lost then return lost end
local after = ARGV[1]
local start = after == '-' and '-' or '(' .. after
local base = tonumber(redis.call('HGET', KEYS[3], 'base') or '0')
-- counting the entries another program added, as the next write adopts them
local last = math.max(tonumber(redis.call('HGET', KEYS[3], 'end') or '0'),
                      base + redis.call('XLEN', KEYS[1]))
return {base, last, redis.call('HGETALL', KEYS[2]),
        redis.call('XRANGE', KEYS[1], start, '+')}
"""

# ARGV: base, channel, number of values, the values, then (id, durability, connected,
# cursor) quads. Replaces the whole topic (seeding, administration).
TOPIC_RESTORE = _NOTIFY + """
if redis.call('EXISTS', KEYS[1]) == 1 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    redis.call('XGROUP', 'DESTROY', KEYS[1], g[2])
  end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
local base, count = tonumber(ARGV[1]), tonumber(ARGV[3])
local ids = {}
for i = 4, 3 + count do table.insert(ids, redis.call('XADD', KEYS[1], '*', 'v', ARGV[i])) end
redis.call('XGROUP', 'CREATE', KEYS[1], 'lq.seed', '$', 'MKSTREAM')
redis.call('XGROUP', 'DESTROY', KEYS[1], 'lq.seed')
redis.call('HSET', KEYS[3], 'base', base, 'end', base + count)
for i = 4 + count, #ARGV, 4 do
  local id, cursor = ARGV[i], tonumber(ARGV[i + 3])
  redis.call('HSET', KEYS[2], id, ARGV[i + 1] .. '|' .. ARGV[i + 2] .. '|' .. cursor)
  local at = cursor - base
  local position = at > 0 and ids[at] or '0-0'
  redis.call('XGROUP', 'CREATE', KEYS[1], 's:' .. id, position)
end
notify(ARGV[2])
return count
"""
