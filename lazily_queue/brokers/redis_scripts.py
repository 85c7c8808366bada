"""The Lua scripts of the Redis backend: every operation that must be atomic.

Each mutating script publishes on the object's change channel (``ARGV`` names it), so
every process with a mirror of the object refreshes it. Error replies that start with
``INCOMPATIBLE`` mean an existing key has settings this object cannot use.
"""

from __future__ import annotations

_NOTIFY = """
-- At most one change message per object every QUIET_MS: a listener refreshes when the
-- message arrives and again QUIET_MS later, so the changes it did not announce are seen.
local function notify(channel)
  if redis.call('SET', channel .. ':quiet', 1, 'PX', QUIET_MS, 'NX') then
    redis.call('PUBLISH', channel, 1)
  end
end
""".replace("QUIET_MS", "5")

_TYPE_CHECK = """
local function require_type(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('INCOMPATIBLE ' .. key .. ' is a ' .. t .. ', not a ' .. want)
  end
  return nil
end
local function setting(key, field, want)
  local have = redis.call('HGET', key, field)
  if have and have ~= want then
    return redis.error_reply('INCOMPATIBLE ' .. key .. ' has ' .. field .. ' ' .. have ..
      ', this object wants ' .. want)
  end
  if not have then redis.call('HSET', key, field, want) end
  return nil
end
"""

# -- work queue: KEYS stream, dead letters, settings; ARGV[1] the group --------------------

_PSEUDO = """
local function pseudo(consumer) return string.sub(consumer, 1, 3) == 'lq.' end
-- The settings hash keeps 'expiry_ms': no lease of the group expires before that
-- server time (a lower bound), so until then claims and reads need not scan the pending
-- entries for expired leases. Nacks, releases and reaps, which make entries claimable
-- at once, set it to 0.
local function now_ms(clock)
  return tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end
local function expiry_due(settings, now)
  return now >= tonumber(redis.call('HGET', settings, 'expiry_ms') or '0')
end
-- The settings exist while the group does (a declare makes them): settings deleted
-- outside this library while the group remains is a half work queue (LOST). Without
-- the group (keys flushed) a script fails NOGROUP, and the queue is declared again.
local function has_group(stream, group)
  if redis.call('EXISTS', stream) == 0 then return false end
  for _, info in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    for i = 1, #info, 2 do
      if info[i] == 'name' and info[i + 1] == group then return true end
    end
  end
  return false
end
local function whole_work(group)
  if redis.call('EXISTS', KEYS[3]) == 1 or not has_group(KEYS[1], group) then return nil end
  return redis.error_reply('LOST ' .. KEYS[3] .. ' (the work queue settings) is gone ' ..
    'while its consumer group remains')
end
local function value_of(fields)
  for i = 1, #fields, 2 do if fields[i] == 'v' then return fields[i + 1] end end
  return ''
end
-- Past maxmemory (noeviction) Redis refuses a script's first write when it may grow
-- memory (XADD, HSET, SET), and lets every later write of that script through. The
-- scripts that consume (claim, settle, reap) therefore write first with a command that
-- does not grow it (XACK, XDEL, XCLAIM, XREADGROUP), so they still run and free memory.
local function dead_letter(stream, dead, group, id, attempts, reason)
  local entry = redis.call('XRANGE', stream, id, id)
  local v = ''
  if entry[1] then v = value_of(entry[1][2]) end
  redis.call('XACK', stream, group, id)
  redis.call('XDEL', stream, id)
  redis.call('XADD', dead, '*', 'i', id, 'v', v, 'a', attempts, 'r', reason)
end
"""

WORK_DECLARE = _TYPE_CHECK + _PSEUDO + """
local bad = require_type(KEYS[1], 'stream') or require_type(KEYS[2], 'stream')
  or require_type(KEYS[3], 'hash') or whole_work(ARGV[1])
if bad then return bad end
bad = setting(KEYS[3], 'visibility_timeout_ms', ARGV[2])
  or setting(KEYS[3], 'max_deliveries', ARGV[3])
if bad then return bad end
-- an existing group is not created again: a worker that starts while the server is
-- past maxmemory declares the queue it is to drain without a write
if has_group(KEYS[1], ARGV[1]) then return 1 end
local made = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
if type(made) == 'table' and made.err and not string.find(made.err, 'BUSYGROUP') then
  return made
end
return 1
"""

# ARGV: channel, then the values -> their entry ids
WORK_PUSH = _NOTIFY + """
local ids = {}
for i = 2, #ARGV do ids[#ids + 1] = redis.call('XADD', KEYS[1], '*', 'v', ARGV[i]) end
notify(ARGV[1])
return ids
"""

# KEYS stream, dead letters, settings. ARGV: group, worker, n, visibility ms, max
# deliveries, channel -> {server TIME, then entry id, delivery count, value of each
# entry leased}. Expired leases (and nacked, released, reaped entries) first, oldest
# entry first; the pending entries are scanned only once a lease may have expired.
WORK_CLAIM = _NOTIFY + _PSEUDO + """
local group, worker, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local lost = whole_work(group)
if lost then return lost end
local vt, max = tonumber(ARGV[4]), tonumber(ARGV[5])
local clock = redis.call('TIME')
local out = {clock}
local taken, changed = 0, false
local now = now_ms(clock)
local next_at = nil
if expiry_due(KEYS[3], now) then
  local scan = redis.call('XPENDING', KEYS[1], group, '-', '+', SCAN)
  next_at = now + vt
  if #scan >= SCAN then next_at = now end
  for _, p in ipairs(scan) do
    local id, idle = p[1], tonumber(p[3])
    if pseudo(p[2]) or idle >= vt then
      if taken < n then
        local claimed = redis.call('XCLAIM', KEYS[1], group, worker, 0, id)
        changed = true
        local times = tonumber(p[4]) + 1
        if claimed[1] then
          if times > max then
            dead_letter(KEYS[1], KEYS[2], group, id, times - 1, 'expired')
          else
            table.insert(out, id); table.insert(out, times)
            table.insert(out, value_of(claimed[1][2]))
            taken = taken + 1
          end
        end
      else
        next_at = now
      end
    elseif now + vt - idle < next_at then
      next_at = now + vt - idle
    end
  end
end
if taken < n then
  local fresh = redis.call('XREADGROUP', 'GROUP', group, worker, 'COUNT', n - taken,
                           'STREAMS', KEYS[1], '>')
  if fresh then
    for _, entry in ipairs(fresh[1][2]) do
      table.insert(out, entry[1]); table.insert(out, 1); table.insert(out, value_of(entry[2]))
      taken = taken + 1
    end
  end
end
-- after XCLAIM or XREADGROUP: never this script's first write (see dead_letter)
if next_at then redis.call('HSET', KEYS[3], 'expiry_ms', next_at) end
if taken > 0 or changed then notify(ARGV[6]) end
return out
""".replace("SCAN", "10000")

# ARGV: group, worker, mode, visibility ms, max deliveries, channel, then (id, count)
# pairs -> a string with '1' or '0' per pair (settled, or refused: not that worker's
# live delivery)
WORK_SETTLE = _NOTIFY + _PSEUDO + """
local group, worker, mode = ARGV[1], ARGV[2], ARGV[3]
local lost = whole_work(group)
if lost then return lost end
local max = tonumber(ARGV[5])
local done, each, settled, acked = 0, {}, {}, {}
for i = 7, #ARGV, 2 do
  local id, count = ARGV[i], tonumber(ARGV[i + 1])
  local p = redis.call('XPENDING', KEYS[1], group, id, id, 1)
  local ok = not settled[id] and p[1] and p[1][2] == worker and p[1][4] == count
  table.insert(each, ok and '1' or '0')
  if ok then
    done = done + 1
    settled[id] = true
    if mode == 'ack' then
      acked[#acked + 1] = id
    elseif mode == 'nack' then
      if count >= max then
        dead_letter(KEYS[1], KEYS[2], group, id, count, 'nack')
      else
        redis.call('XCLAIM', KEYS[1], group, 'lq.nacked', 0, id, 'IDLE', ARGV[4], 'JUSTID')
        redis.call('HSET', KEYS[3], 'expiry_ms', 0)
      end
    elseif mode == 'extend' then
      redis.call('XCLAIM', KEYS[1], group, worker, 0, id, 'JUSTID')
    elseif mode == 'release' then
      redis.call('XCLAIM', KEYS[1], group, 'lq.released', 0, id, 'IDLE', ARGV[4],
                 'RETRYCOUNT', count - 1, 'JUSTID')
      redis.call('HSET', KEYS[3], 'expiry_ms', 0)
    end
  end
end
-- the acked entries leave the group and the stream together (a few calls per batch)
for i = 1, #acked, 500 do
  local part = {unpack(acked, i, math.min(i + 499, #acked))}
  redis.call('XACK', KEYS[1], group, unpack(part))
  redis.call('XDEL', KEYS[1], unpack(part))
end
if done > 0 and mode ~= 'extend' then notify(ARGV[6]) end
return table.concat(each)
"""

# ARGV: group, visibility ms, max deliveries, channel
WORK_REAP = _NOTIFY + _PSEUDO + """
local group, max = ARGV[1], tonumber(ARGV[3])
local lost = whole_work(group)
if lost then return lost end
local expired = 0
local stale = redis.call('XPENDING', KEYS[1], group, 'IDLE', ARGV[2], '-', '+', 1000)
for _, p in ipairs(stale) do
  if not pseudo(p[2]) then
    expired = expired + 1
    if p[4] >= max then
      dead_letter(KEYS[1], KEYS[2], group, p[1], p[4], 'expired')
    else
      redis.call('XCLAIM', KEYS[1], group, 'lq.expired', 0, p[1], 'IDLE', ARGV[2], 'JUSTID')
    end
  end
end
if expired > 0 then
  redis.call('HSET', KEYS[3], 'expiry_ms', 0)
  notify(ARGV[4])
end
return expired
"""

# ARGV: channel, the dead-letter entry id to read after ('-': from the first), how many
# to read, then the original entry ids to redrive (none: every dead letter) -> {moved,
# the last dead-letter entry id read, or '' once the stream is read to its end}. One
# page per call, so a long dead-letter stream never blocks the server in one script.
WORK_REDRIVE = _NOTIFY + _PSEUDO + """
local wanted = nil
if #ARGV > 3 then
  wanted = {}
  for i = 4, #ARGV do wanted[ARGV[i]] = true end
end
local start = ARGV[2] == '-' and '-' or '(' .. ARGV[2]
local page = redis.call('XRANGE', KEYS[2], start, '+', 'COUNT', tonumber(ARGV[3]))
local moved = 0
for _, entry in ipairs(page) do
  local fields = {}
  for i = 1, #entry[2] - 1, 2 do fields[entry[2][i]] = entry[2][i + 1] end
  if wanted == nil or wanted[fields['i']] then
    redis.call('XDEL', KEYS[2], entry[1])
    redis.call('XADD', KEYS[1], '*', 'v', fields['v'] or '')
    moved = moved + 1
  end
end
if moved > 0 then notify(ARGV[1]) end
local last = ''
if #page >= tonumber(ARGV[3]) then last = page[#page][1] end
return {moved, last}
"""

# ARGV: group, view limit, visibility ms. A lease idle longer than the visibility
# timeout counts as pending: the next claim takes it (at most 10000 are counted so).
WORK_READ = _PSEUDO + """
local group, limit = ARGV[1], tonumber(ARGV[2])
local lost = whole_work(group)
if lost then return lost end
local clock = redis.call('TIME')
local summary = redis.call('XPENDING', KEYS[1], group)
local held = 0
for _, row in ipairs(summary[4] or {}) do
  if pseudo(row[1]) then held = held + tonumber(row[2]) end
end
local expired = {}
if summary[1] > held and expiry_due(KEYS[3], now_ms(clock)) then
  for _, p in ipairs(redis.call('XPENDING', KEYS[1], group, 'IDLE', ARGV[3], '-', '+', 10000)) do
    if not pseudo(p[2]) then expired[p[1]] = true; held = held + 1 end
  end
end
local in_flight = summary[1] - held
local last = '0-0'
for _, info in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local fields = {}
  for i = 1, #info, 2 do fields[info[i]] = info[i + 1] end
  if fields['name'] == group then last = fields['last-delivered-id'] end
end
local pending, flying = {}, {}
for _, p in ipairs(redis.call('XPENDING', KEYS[1], group, '-', '+', limit * 2)) do
  local entry = redis.call('XRANGE', KEYS[1], p[1], p[1])[1]
  local v = entry and value_of(entry[2]) or ''
  if pseudo(p[2]) or expired[p[1]] then
    if #pending < limit then table.insert(pending, {p[1], p[4], v}) end
  elseif #flying < limit then
    table.insert(flying, {p[1], p[4], v, p[2], p[3]})
  end
end
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '(' .. last, '+', 'COUNT', limit)) do
  if #pending < limit then table.insert(pending, {entry[1], 0, value_of(entry[2])}) end
end
local dead = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', limit)
local info, last_id = redis.call('XINFO', 'STREAM', KEYS[1]), '0-0'
for i = 1, #info, 2 do if info[i] == 'last-generated-id' then last_id = info[i + 1] end end
return {clock, redis.call('XLEN', KEYS[1]) - in_flight, in_flight,
        redis.call('XLEN', KEYS[2]), pending, flying, dead, last_id}
"""
