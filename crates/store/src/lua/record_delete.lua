-- record_delete.lua: delete a stream record (KEYS[1]) if its stored revision is the expected one.
-- ARGV[1] expected revision.
-- Replies: the prelude's CONFLICT/CORRUPT | {'DELETED', now}.
local _, refused = check_revision(ARGV[1])
if refused then
  return refused
end

redis.call('DEL', KEYS[1])
return {'DELETED', now}
