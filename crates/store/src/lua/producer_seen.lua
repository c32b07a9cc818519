-- A producer's routing fetch (producer quiesce): KEYS[1] the stream record, KEYS[2] the stream's `seen` hash
-- (same hash tag). ARGV[1] producer id, ARGV[2] the value (`<now ms>` or `<now ms> <principal>`), ARGV[3] how
-- long sightings live (ms), ARGV[4] most producers kept per stream.
-- Returns 1 recorded; 0 the stream has no record (nothing written: a read of a stream that does not exist
-- never creates a key); -1 the hash already holds ARGV[4] other producers (nothing written).
-- The hash expires ARGV[3] after its last write, so sightings of a stream nobody reads any more go away.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then
  return -1
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
