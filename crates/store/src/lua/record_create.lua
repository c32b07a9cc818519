-- record_create.lua: create a stream record (KEYS[1], a hash laid out as a group's metadata) only
-- if it does not exist yet. ARGV[1] record JSON, ARGV[2] updatedAt.
-- Replies: {'EXISTS', now} | {'CREATED', now}.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'EXISTS', now}
end
redis.call('HSET', KEYS[1],
  'aggregate', ARGV[1],
  'revision', '1',
  'schemaVersion', '1',
  'layoutVersion', '1',
  'updatedAt', ARGV[2])
return {'CREATED', now}
