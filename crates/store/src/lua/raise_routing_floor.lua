-- Raises a shard's routing boundary (guarded publish) to ARGV[1] when it is lower, recording the switch
-- point (switch_point.lua), and annotates the switch with ARGV[2] (`<version> <from> <to> <ordered 0|1>`,
-- '' for none) when the boundary is now at ARGV[1], also when a producer's append raised it first: consumers
-- read the annotation to tell whether the switch fences a shard. KEYS[1] the shard stream, KEYS[2] its
-- routing key (same slot). Idempotent: repeating a switch changes nothing.
-- Returns {raised (1 or 0), floor, switchId}: the boundary as it now stands (its floor is above ARGV[1] when
-- a later switch raised it already; then nothing was changed).
local current = tonumber(redis.call('HGET', KEYS[2], 'floor') or '0')
local floor = tonumber(ARGV[1])
local raised = 0
if floor > current then
  raise_boundary(floor)
  raised = 1
  current = floor
end
if floor == current and ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], 'scale', ARGV[2])
end
return {raised, current, redis.call('HGET', KEYS[2], 'switchId') or '0-0'}
