-- heartbeat.lua: the hot path. Renew one member's lease and store its progress, if the group is
-- still at the revision the caller knows and the lease has not lapsed. O(log N), one round trip,
-- and it never reads or writes the aggregate.
-- KEYS[1] metadata hash, KEYS[2] leases zset, KEYS[3] progress hash (one hash slot).
-- ARGV[1] expected revision, ARGV[2] member id, ARGV[3] lease TTL ms,
-- ARGV[4] '1' if ARGV[5] holds progress JSON to store, else '0'; ARGV[6] watch window ms (absent: 0).
-- Replies: the prelude's CONFLICT/CORRUPT | {'LEASE_LAPSED', now} | {'RENEWED', now, lapsed[, member,
-- deadline]} where lapsed is 1 if some other member's lease has run out (its expiry is due), else 0, and
-- member/deadline name the other member whose lease ends first when that is before now + the watch
-- window: an O(log N) look at the lease set's lowest deadline, so the first heartbeat after a lapse can
-- have it acted on at once, and the members that would take over its shards can be asked back in time.
local _, refused = check_revision(ARGV[1])
if refused then
  return refused
end

local deadline = redis.call('ZSCORE', KEYS[2], ARGV[2])
if (not deadline) or now >= tonumber(deadline) then
  return {'LEASE_LAPSED', now}
end

redis.call('ZADD', KEYS[2], string.format('%.0f', now + tonumber(ARGV[3])), ARGV[2])
if ARGV[4] == '1' then
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[5])
end
local lowest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if not lowest[1] then
  return {'RENEWED', now, 0}
end
local first = tonumber(lowest[2])
local lapsed = 0
if first <= now then
  lapsed = 1
end
if lowest[1] ~= ARGV[2] and first < now + tonumber(ARGV[6] or '0') then
  return {'RENEWED', now, lapsed, lowest[1], math.floor(first)}
end
return {'RENEWED', now, lapsed}
