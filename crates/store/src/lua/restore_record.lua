-- restore_record.lua: write one metadata-shaped hash (a group's metadata or a stream record) back from a
-- backup, only if the key is still in the state the restore checked. With five keys (a group), the
-- group's leases, progress and out-of-line aggregate are cleared and every member in ARGV[8..] gets a fresh lease of ARGV[7] ms
-- from Redis time: the restored aggregate says they may hold shards, and their client-side leases may
-- still run, so their shards must stay theirs until a lease of the coordinator's length has passed.
-- KEYS[1] the hash; KEYS[2] leases zset, KEYS[3] progress hash, KEYS[4] aggregate key, KEYS[5] aggregate
-- staging key (groups only, same slot). The hash is written back with its aggregate in the field.
-- ARGV[1] the revision the key must be at ('' = the key must not exist), ARGV[2] revision to write,
-- ARGV[3] aggregate JSON, ARGV[4] updatedAt, ARGV[5] schemaVersion, ARGV[6] layoutVersion,
-- ARGV[7] lease TTL ms, ARGV[8..] members to lease.
-- Replies: {'RESTORED', now} | {'CHANGED', now, current revision or ''}.
local current = redis.call('HGET', KEYS[1], 'revision')
if ARGV[1] == '' then
  if redis.call('EXISTS', KEYS[1]) == 1 then
    return {'CHANGED', now, current or ''}
  end
elseif current ~= ARGV[1] then
  return {'CHANGED', now, current or ''}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1],
  'aggregate', ARGV[3],
  'revision', ARGV[2],
  'schemaVersion', ARGV[5],
  'layoutVersion', ARGV[6],
  'updatedAt', ARGV[4])
if #KEYS == 5 then
  redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
  local deadline = string.format('%.0f', now + tonumber(ARGV[7]))
  for i = 8, #ARGV do
    redis.call('ZADD', KEYS[2], deadline, ARGV[i])
  end
end
return {'RESTORED', now}
