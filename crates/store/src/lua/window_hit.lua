-- A fixed-window counter: count one hit in KEYS[1] and start the window (ARGV[1] ms) on the first.
-- Returns {count, ms until the window ends}.
local c = redis.call('INCR', KEYS[1])
local t = redis.call('PTTL', KEYS[1])
if t < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  t = tonumber(ARGV[1])
end
return {c, t}
