-- A user's token index (ZSET digest -> end ms): list a new token and apply the cap.
-- KEYS: the user's index. ARGV: now ms, the new token's end, its digest, the cap. Drops ended entries,
-- lists the new token, and removes (and returns) the oldest beyond the cap. The index expires with its
-- last token.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
local evicted = {}
if over > 0 then
  evicted = redis.call('ZRANGE', KEYS[1], 0, over - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], last[2]) end
return evicted
