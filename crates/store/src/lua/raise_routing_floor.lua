-- Raises a shard's routing boundary (guarded publish) to ARGV[1] when it is lower, and records the switch
-- point: the stream's last id and entries-added at that moment, and a fresh count of guarded appends.
-- KEYS[1] the shard stream, KEYS[2] its routing key (same slot). Returns 1 when raised, 0 when the boundary
-- was already at or above ARGV[1] (idempotent: repeating a switch changes nothing).
local current = tonumber(redis.call('HGET', KEYS[2], 'floor') or '0')
local floor = tonumber(ARGV[1])
if floor <= current then
  return 0
end
local last, added = '0-0', 0
if redis.call('EXISTS', KEYS[1]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then last = info[i + 1] end
    if info[i] == 'entries-added' then added = info[i + 1] end
  end
end
redis.call('HSET', KEYS[2], 'floor', floor, 'switchId', last, 'addedAtSwitch', added, 'guarded', 0)
return 1
