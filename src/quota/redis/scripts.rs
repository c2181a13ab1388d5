//! The Lua scripts of the Redis store. Each runs whole inside Redis (so a request's limits are
//! checked and charged all or nothing, however many replicas ask at once) and takes its clock
//! from Redis (`TIME`), so replicas whose clocks differ still share one window. The sums are
//! `count.rs`'s, in Lua (both are held to the same steps by the tests: `count.rs`'s own,
//! and tests/quota_replicas.rs, which runs windows and a bucket on Redis). They need Redis 5
//! or later (a write after `TIME`).
//!
//! A client's counters are one hash (`KEYS[1]`), fields `<limit id>|u` (used) and
//! `<limit id>|m` (the window's index, or the millisecond a bucket was last filled to).

/// Asks each limit for its cost. `ARGV`: 1 to charge (0 to look only), the number of
/// limits, then six values each: id, amount, per (ms), capacity (0: a window), cost, enforce
/// (1, or 0 for a shadow limit). Replies four numbers a limit: over (1/0), remaining, reset
/// (ms), mark. The hash lives as long as its slowest counter needs: two windows, or twice a
/// bucket's time to drain.
pub const ADMIT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key = KEYS[1]
local charge = ARGV[1] == '1'
local out, after, refused, keep = {}, {}, false, 0
for i = 0, tonumber(ARGV[2]) - 1 do
  local b = 3 + i * 6
  local id = ARGV[b]
  local amount, per = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
  local capacity, cost = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local enforce = ARGV[b + 5] == '1'
  local used = tonumber(redis.call('HGET', key, id .. '|u') or '0')
  local mark = tonumber(redis.call('HGET', key, id .. '|m') or '0')
  local ceiling, rate = amount, amount / per
  if capacity == 0 then
    local window = math.floor(now / per)
    if mark ~= window then used = 0; mark = window end
    keep = math.max(keep, per * 2)
  else
    ceiling = capacity
    used = math.max(0, used - math.max(0, now - mark) * rate)
    mark = now
    keep = math.max(keep, per * 2, math.ceil(capacity / rate) * 2)
  end
  local over = used + cost > ceiling
  if over and enforce then refused = true else used = used + cost end
  local reset
  if capacity == 0 then
    reset = (mark + 1) * per - now
  elseif over and enforce then
    reset = math.ceil((used + cost - ceiling) / rate)
  elseif over then
    reset = math.ceil((used - ceiling) / rate)
  else
    reset = math.ceil(used / rate)
  end
  out[#out + 1] = over and 1 or 0
  out[#out + 1] = math.max(0, math.floor(ceiling - used))
  out[#out + 1] = reset
  out[#out + 1] = mark
  after[#after + 1] = {id, used, mark}
end
if charge and not refused then
  for _, a in ipairs(after) do
    redis.call('HSET', key, a[1] .. '|u', string.format('%.17g', a[2]), a[1] .. '|m', string.format('%d', a[3]))
  end
  if redis.call('PTTL', key) < keep then redis.call('PEXPIRE', key, keep) end
end
return out
";

/// Adds what requests really cost. `ARGV`: the number of charges, then seven values each:
/// id, amount, per (ms), capacity (0: a window), the mark it was charged at, what it was
/// charged, the difference. One counter may be settled for several requests at once: each
/// adds to what the one before left. A window that has ended is left alone; a bucket is
/// refunded no more than what of the charge it still holds (the rest has drained); nothing
/// goes below empty.
pub const SETTLE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, b, n = KEYS[1], 2, tonumber(ARGV[1])
local fields = {}
for i = 0, n - 1 do
  local id = ARGV[b + i * 7]
  fields[i * 2 + 1], fields[i * 2 + 2] = id .. '|u', id .. '|m'
end
local stored = redis.call('HMGET', key, unpack(fields))
local value, changed = {}, {}
for i, field in ipairs(fields) do value[field] = tonumber(stored[i]) or false end
for i = 0, n - 1 do
  local c = b + i * 7
  local u, m = fields[i * 2 + 1], fields[i * 2 + 2]
  local amount, per = tonumber(ARGV[c + 1]), tonumber(ARGV[c + 2])
  local capacity, charged = tonumber(ARGV[c + 3]), tonumber(ARGV[c + 4])
  local cost, delta = tonumber(ARGV[c + 5]), tonumber(ARGV[c + 6])
  local used, mark = value[u], value[m] or 0
  if used and capacity == 0 then
    if mark == charged and math.floor(now / per) == mark then
      value[u], changed[u] = math.max(0, used + delta), '%.17g'
    end
  elseif used then
    local rate = amount / per
    used = math.max(0, used - math.max(0, now - mark) * rate)
    local held = math.max(0, cost - math.max(0, now - charged) * rate)
    value[u], changed[u] = math.max(0, used + math.max(delta, -held)), '%.17g'
    value[m], changed[m] = now, '%d'
  end
end
local writes = {}
for field, format in pairs(changed) do
  writes[#writes + 1] = field
  writes[#writes + 1] = string.format(format, value[field])
end
if #writes > 0 then redis.call('HSET', key, unpack(writes)) end
return 0
";

/// Says this replica is alive and counts those that said so lately. `KEYS[1]`: the set;
/// `ARGV`: this replica's name, how long a replica counts after it last said so (ms).
pub const BEAT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lately = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - lately)
redis.call('PEXPIRE', KEYS[1], lately * 2)
return redis.call('ZCARD', KEYS[1])
";
