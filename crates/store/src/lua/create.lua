-- create.lua: create a group's metadata only if it does not exist yet.
-- KEYS[1] metadata hash, KEYS[2] leases zset, KEYS[3] progress hash, KEYS[4] aggregate key, KEYS[5]
-- aggregate staging key (one hash slot).
-- ARGV[1] aggregate JSON, ARGV[2] updatedAt, ARGV[3] lease TTL ms, ARGV[4..] initial lease members.
-- Leftover leases/progress/aggregate keys of an earlier group of the same name are cleared, so a new group
-- never inherits a lease. Lease deadlines come from the Redis server clock (`now`, prelude).
-- Replies: {'EXISTS', now} | {'CREATED', now}.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'EXISTS', now}
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call('HSET', KEYS[1],
  'aggregate', ARGV[1],
  'revision', '1',
  'schemaVersion', '1',
  'layoutVersion', '1',
  'updatedAt', ARGV[2])
local deadline = string.format('%.0f', now + tonumber(ARGV[3]))
for i = 4, #ARGV do
  redis.call('ZADD', KEYS[2], deadline, ARGV[i])
end
return {'CREATED', now}
