-- heartbeat.lua: the hot path. Renew one member's lease and store its progress, if the group is
-- still at the revision the caller knows and the lease has not lapsed. O(log N), one round trip,
-- and it never reads or writes the aggregate.
-- KEYS[1] metadata hash, KEYS[2] leases zset, KEYS[3] progress hash (one hash slot).
-- ARGV[1] expected revision, ARGV[2] member id, ARGV[3] lease TTL ms,
-- ARGV[4] '1' if ARGV[5] holds progress JSON to store, else '0'; ARGV[6] watch window ms (absent: 0);
-- ARGV[7] the member whose release the caller waits for (absent or '': none).
-- Replies: the prelude's CONFLICT/CORRUPT | {'LEASE_LAPSED', now} | {'RENEWED', now, lapsed[, member,
-- deadline]} where lapsed is 1 if some other member's lease has run out (its expiry is due), else 0, and
-- member/deadline name the other member whose lease ends first when that is before now + the watch
-- window: an O(log N) look at the lease set's lowest deadline, so the first heartbeat after a lapse can
-- have it acted on at once, and the members that would take over its shards can be asked back in time.
-- With ARGV[7]: {'RENEWED', now, lapsed, member or '', deadline or 0, awaited} where awaited is that
-- member's lease deadline (-1: it has none), one O(1) ZSCORE more, so the caller can be asked back when
-- the member it waits for is due to release (the release forecast).
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
local lapsed = 0
local peer, peer_deadline = nil, 0
if lowest[1] then
  local first = tonumber(lowest[2])
  if first <= now then
    lapsed = 1
  end
  if lowest[1] ~= ARGV[2] and first < now + tonumber(ARGV[6] or '0') then
    peer, peer_deadline = lowest[1], math.floor(first)
  end
end
if ARGV[7] and ARGV[7] ~= '' then
  local awaited = redis.call('ZSCORE', KEYS[2], ARGV[7])
  local awaited_deadline = -1
  if awaited then
    awaited_deadline = math.floor(tonumber(awaited))
  end
  return {'RENEWED', now, lapsed, peer or '', peer_deadline, awaited_deadline}
end
if peer then
  return {'RENEWED', now, lapsed, peer, peer_deadline}
end
return {'RENEWED', now, lapsed}
