-- Guarded publish: XADD to a shard stream unless the producer's routing is older than the shard's routing
-- boundary. KEYS[1] the shard stream, KEYS[2] its routing key (same slot). ARGV[1] the producer's routing
-- version, ARGV[2] MAXLEN ~ n ('' = no trimming), ARGV[3..] field, value, ...
-- Returns the new entry id; nil when the stream does not exist (NOMKSTREAM: a stale route);
-- {'stale', floor} when the routing version is below the boundary (nothing written); or {'ahead', ceiling}
-- when it is above the highest version the coordinator published for the stream (`ceiling`, written by
-- raise_routing_ceiling.lua before the stream record publishes it): a made-up version cannot move the
-- boundary and stop every other producer (nothing written). A routing key without a ceiling (a stream from
-- before ceilings, until the coordinator writes one) accepts the raise as before.
-- An append with a newer routing version than the boundary raises it first, recording the switch point
-- (switch_point.lua): then no record routed by the new routing lies before the switch point, even when this
-- producer learnt of the switch before the coordinator raised the boundary, and every older producer is
-- refused from now on. O(1) besides the XADD itself (the raise reads XINFO STREAM once per switch). Appends
-- made at or above a raised boundary are counted in `guarded`, so the coordinator can tell plain XADDs after
-- a switch apart from guarded ones.
local floor = tonumber(redis.call('HGET', KEYS[2], 'floor') or '0')
local version = tonumber(ARGV[1])
if version < floor then
  return {'stale', floor}
end
if version > floor then
  local ceiling = redis.call('HGET', KEYS[2], 'ceiling')
  if ceiling and version > tonumber(ceiling) then
    return {'ahead', tonumber(ceiling)}
  end
  if redis.call('EXISTS', KEYS[1]) == 0 then
    return nil
  end
  raise_boundary(version)
  floor = version
end
local args = {'XADD', KEYS[1], 'NOMKSTREAM'}
if ARGV[2] ~= '' then
  args[#args + 1] = 'MAXLEN'
  args[#args + 1] = '~'
  args[#args + 1] = ARGV[2]
end
args[#args + 1] = '*'
for i = 3, #ARGV do
  args[#args + 1] = ARGV[i]
end
local id = redis.call(unpack(args))
if id and floor > 0 then
  redis.call('HINCRBY', KEYS[2], 'guarded', 1)
end
return id
