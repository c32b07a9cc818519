-- Raises a shard's routing ceiling (guarded publish): the highest routing version the coordinator has
-- published, or is about to publish, for the shard's stream. KEYS[1] the shard's routing key, ARGV[1] the
-- version. Written before the stream record that publishes the version, so a producer that holds it can
-- raise the shard's boundary to it; guarded_append.lua refuses any version above it (a forged version
-- cannot move the boundary). Only ever raised: versions only grow, also across a stream's lifecycles.
-- Returns 1 when raised, 0 when the ceiling already stood at or above ARGV[1].
local current = tonumber(redis.call('HGET', KEYS[1], 'ceiling') or '0')
local version = tonumber(ARGV[1])
if version > current then
  redis.call('HSET', KEYS[1], 'ceiling', version)
  return 1
end
return 0
