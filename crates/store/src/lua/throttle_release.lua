-- Sign-in throttle: a verified attempt. KEYS: pair, address, username. The pair starts afresh, the
-- address and the username get their reservation back.
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  if redis.call('HINCRBY', KEYS[2], 'n', -1) <= 0 then redis.call('DEL', KEYS[2]) end
end
local u = tonumber(redis.call('GET', KEYS[3]) or '0')
if u > 1 then redis.call('DECR', KEYS[3]) elseif u == 1 then redis.call('DEL', KEYS[3]) end
return 0
