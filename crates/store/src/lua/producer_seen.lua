-- A producer's routing fetch (producer quiesce, rollback stake): KEYS[1] the stream record, KEYS[2] the stream's
-- `seen` hash, KEYS[3] its `first-seen` hash (same hash tag). ARGV[1] producer id, ARGV[2] the value
-- (`<now ms>` or `<now ms> <principal>`), ARGV[3] how long sightings live (ms), ARGV[4] most producers kept per
-- stream, ARGV[5] now (ms).
-- Returns 1 recorded; 0 the stream has no record (nothing written: a read of a stream that does not exist
-- never creates a key); -1 the hash already holds ARGV[4] other producers (nothing written).
-- First seen: set to now for a producer not in `seen` (a stale entry another replica left is replaced), kept
-- while it stays there; a producer in `seen` without one (written before first-seen times were kept, or by
-- an earlier version) gets the time of its previous sighting, the earliest moment it is known to have been
-- there. Both hashes expire ARGV[3] after their last write, so sightings of a stream nobody reads any more
-- go away.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local previous = redis.call('HGET', KEYS[2], ARGV[1])
if not previous and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then
  return -1
end
if not previous then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[5])
elseif redis.call('HEXISTS', KEYS[3], ARGV[1]) == 0 then
  redis.call('HSET', KEYS[3], ARGV[1], string.match(previous, '^%-?%d+') or ARGV[5])
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
return 1
