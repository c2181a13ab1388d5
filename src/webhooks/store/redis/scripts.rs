//! The Lua scripts the Redis store runs, each one step that must not be seen half done (Redis
//! runs a script whole, nothing between its commands).

/// Stores an event unless its id was seen: `SET seen NX EX ttl`, then the event on the stream
/// and its id in the receipt order. KEYS: seen, stream, received. ARGV: event, received_ms,
/// ttl in seconds, id. 1: stored; 0: a repeat.
pub const PUT: &str = r"
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[3]) then
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[1])
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[4])
  return 1
end
return 0
";

/// Moves the retries that are due (score up to now) from the schedule to the stream.
/// KEYS: due, stream. ARGV: now_ms, most. How many moved.
pub const DUE: &str = r"
local items = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, item in ipairs(items) do
  redis.call('ZREM', KEYS[1], item)
  redis.call('XADD', KEYS[2], '*', 'e', item)
end
return #items
";

/// Makes one given-up event due again, if it still is given up (another replica may have
/// replayed it). KEYS: given_up, stream, received. ARGV: id, event (replayed), received_ms.
/// 1: replayed; 0: it was not there.
pub const REPLAY: &str = r"
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('XADD', KEYS[2], '*', 'e', ARGV[2])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
  return 1
end
return 0
";
