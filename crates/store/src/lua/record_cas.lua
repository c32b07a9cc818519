-- record_cas.lua: write a stream record (KEYS[1]) if its stored revision is the expected one.
-- ARGV[1] expected revision, ARGV[2] record JSON, ARGV[3] updatedAt.
-- Replies: the prelude's CONFLICT/CORRUPT | {'WRITTEN', now, new revision}.
local current, refused = check_revision(ARGV[1])
if refused then
  return refused
end

local next_revision = current + 1
redis.call('HSET', KEYS[1],
  'aggregate', ARGV[2],
  'revision', string.format('%.0f', next_revision),
  'updatedAt', ARGV[3])
return {'WRITTEN', now, next_revision}
