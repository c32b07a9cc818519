-- Reads a fixed-window counter without counting. Returns {count, PTTL}.
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
return {c, redis.call('PTTL', KEYS[1])}
