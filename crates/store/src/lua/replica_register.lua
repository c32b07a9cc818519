-- Registers (or renews) one coordinator replica in the replica registry, a sorted set of replica id → lease end
-- in Redis-server milliseconds (KEYS[1]); drops replicas whose lease ended; returns {now, {id, lease end, …}} of
-- the live replicas.
-- ARGV[1]: the replica id, ARGV[2]: the lease in ms. The registry key itself expires when no replica renews it.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease * 2)
return {now, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')}
