-- A user's token index (ZSET digest -> end ms): list a new token and apply the cap.
-- KEYS: the user's index. ARGV: now ms, the new token's end, its digest, the cap. Drops ended entries,
-- lists the new token, and removes (and returns) the oldest beyond the cap. The index expires with its
-- last token.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
-- A token that ends in the same millisecond as the newest listed one (issued in the same millisecond) is
-- listed just after it, a thousandth of a millisecond later: equal scores would order by digest, and the cap
-- could revoke the newer of the two. Tokens ending in different milliseconds stay ordered by their end.
local score = tonumber(ARGV[2])
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if top[2] then
  local newest = tonumber(top[2])
  if newest >= score and newest < score + 1 then score = newest + 0.001 end
end
redis.call('ZADD', KEYS[1], score, ARGV[3])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
local evicted = {}
if over > 0 then
  evicted = redis.call('ZRANGE', KEYS[1], 0, over - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', KEYS[1], math.ceil(tonumber(last[2]))) end
return evicted
