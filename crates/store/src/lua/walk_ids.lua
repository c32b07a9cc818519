-- One page of a walk over a shard stream's ids, for an offset reset's counts and shifts: runs ARGV[1]
-- (XRANGE or XREVRANGE) on KEYS[1] from ARGV[2] to ARGV[3] with COUNT ARGV[4] inside Redis and returns only
-- {how many entries, the id of the last one} ({0, nil} when none), so no payload crosses the network.
local page = redis.call(ARGV[1], KEYS[1], ARGV[2], ARGV[3], 'COUNT', ARGV[4])
local n = #page
if n == 0 then
  return {0, false}
end
return {n, page[n][1]}
