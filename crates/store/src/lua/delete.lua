-- delete.lua: delete a group's metadata, leases and progress if the stored revision is the
-- expected one.
-- KEYS[1] metadata hash, KEYS[2] leases zset, KEYS[3] progress hash, KEYS[4] aggregate key, KEYS[5]
-- aggregate staging key (one hash slot).
-- ARGV[1] expected revision.
-- Replies: the prelude's CONFLICT/CORRUPT | {'DELETED', now}.
local _, refused = check_revision(ARGV[1])
if refused then
  return refused
end

redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return {'DELETED', now}
