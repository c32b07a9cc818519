-- cas.lua: write a new aggregate if the stored revision is the expected one and every lease
-- condition holds. All checks run before any write, so a refused call changes nothing.
-- KEYS[1] metadata hash, KEYS[2] leases zset, KEYS[3] progress hash, KEYS[4] aggregate key, KEYS[5] staging
-- key (one hash slot).
-- ARGV[1] expected revision, ARGV[2] aggregate for the hash's field (plain JSON; empty for layout '3'),
-- ARGV[3] updatedAt, ARGV[4] lease TTL ms,
-- ARGV[5] not-before ms (0 = none), ARGV[6..11] counts of the six lists that follow in this order:
-- must-be-lapsed, must-be-live, renew, progress (member and document pairs: the count is of pairs),
-- remove (lease and progress), drop-lease (the lease only: the member's last progress stays readable).
-- They are applied in that order, so a removal wins over a renewal or a progress write. The last ARGV is the
-- layoutVersion the aggregate is written under: '1', the field; '3', out of line: the caller SET the
-- compressed aggregate (store/src/aggregate_codec.rs) into the staging key in the same MULTI/EXEC, and this
-- script renames it into the aggregate key if the write goes ahead and deletes it if not. (A large argument
-- costs Redis far more inside a script than in a plain SET.)
-- Layout '4' (the aggregate split into fields, store/src/split_layout.rs): ARGV[2] is the header document, and
-- after the six lists come: full ('1': replace every entry; '0': only these changes, refused as a CONFLICT
-- unless the hash is of layout '4' already), the parts field, the count of entries to set and their (field,
-- JSON) pairs, the count of entries to delete and their fields. Writing '1' or '3' onto a hash of layout '4'
-- removes its header and every entry.
-- A lease is live while now < deadline; lapsed when now >= deadline or absent.
-- Replies: the prelude's CONFLICT/CORRUPT | {'TOO_EARLY', now} | {'LEASE_ACTIVE', now, member}
--        | {'LEASE_LAPSED', now, member} | {'WRITTEN', now, new revision}
--        | {'NOT_STAGED', now} (layout '3' without a staged aggregate: the SET before it failed).
local layout = ARGV[#ARGV]
local function refuse(reply)
  if layout == '3' then
    redis.call('DEL', KEYS[5])
  end
  return reply
end

local current, refused = check_revision(ARGV[1])
if refused then
  return refuse(refused)
end
if layout == '3' and redis.call('EXISTS', KEYS[5]) == 0 then
  return {'NOT_STAGED', now}
end
local stored_layout = redis.call('HGET', KEYS[1], 'layoutVersion')

if now < tonumber(ARGV[5]) then
  return refuse({'TOO_EARLY', now})
end

local n_lapsed = tonumber(ARGV[6])
local n_live = tonumber(ARGV[7])
local n_renew = tonumber(ARGV[8])
local n_remove = tonumber(ARGV[9])
local n_drop_lease = tonumber(ARGV[10])
local n_progress = tonumber(ARGV[11])
local first = 12

for i = first, first + n_lapsed - 1 do
  local deadline = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if deadline and now < tonumber(deadline) then
    return refuse({'LEASE_ACTIVE', now, ARGV[i]})
  end
end
first = first + n_lapsed

for i = first, first + n_live - 1 do
  local deadline = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if (not deadline) or now >= tonumber(deadline) then
    return refuse({'LEASE_LAPSED', now, ARGV[i]})
  end
end
first = first + n_live

-- Where the split layout's arguments start (after the six lists), and its guard: changes alone apply only
-- to a hash that holds the split layout's entries already.
local split_first = first + n_renew + 2 * n_progress + n_remove + n_drop_lease
local full = layout == '4' and ARGV[split_first] or nil
if full == '0' and stored_layout ~= '4' then
  return refuse({'CONFLICT', now, current})
end

local renewed = string.format('%.0f', now + tonumber(ARGV[4]))
for i = first, first + n_renew - 1 do
  redis.call('ZADD', KEYS[2], renewed, ARGV[i])
end
first = first + n_renew

for i = first, first + 2 * n_progress - 1, 2 do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
end
first = first + 2 * n_progress

for i = first, first + n_remove - 1 do
  redis.call('ZREM', KEYS[2], ARGV[i])
  redis.call('HDEL', KEYS[3], ARGV[i])
end
first = first + n_remove

for i = first, first + n_drop_lease - 1 do
  redis.call('ZREM', KEYS[2], ARGV[i])
end
first = first + n_drop_lease

-- Many fields go to Redis in a few calls, not one call each: a call from Lua costs far more than a field
-- within it (a write of thousands of entries spent most of its time in the calls). CHUNK bounds the arguments
-- of one call (Lua's stack holds about 8,000); it is even, so field/value pairs are never cut apart.
local CHUNK = 4000
-- Sends `command` with `list[from..to]`, CHUNK at a time.
local function chunked(command, list, from, to)
  local i = from
  while i <= to do
    local last = math.min(i + CHUNK - 1, to)
    redis.call(command, KEYS[1], unpack(list, i, last))
    i = last + 1
  end
end

-- Removes the split layout's header and entries (fields named '<part>/<key>').
local function clear_split()
  local entries = {}
  for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    if string.find(field, '/', 1, true) then
      entries[#entries + 1] = field
    end
  end
  chunked('HDEL', entries, 1, #entries)
  redis.call('HDEL', KEYS[1], 'header', 'parts')
end

local next_revision = current + 1
if layout == '4' then
  if full == '1' then
    clear_split()
  end
  redis.call('DEL', KEYS[4])
  redis.call('HDEL', KEYS[1], 'aggregate')
  local n_set = tonumber(ARGV[split_first + 2])
  local at = split_first + 3
  chunked('HSET', ARGV, at, at + 2 * n_set - 1)
  at = at + 2 * n_set
  local n_del = tonumber(ARGV[at])
  chunked('HDEL', ARGV, at + 1, at + n_del)
  redis.call('HSET', KEYS[1], 'header', ARGV[2], 'parts', ARGV[split_first + 1])
elseif layout == '3' then
  redis.call('RENAME', KEYS[5], KEYS[4])
  redis.call('PERSIST', KEYS[4])
  redis.call('HDEL', KEYS[1], 'aggregate')
else
  redis.call('DEL', KEYS[4])
  redis.call('HSET', KEYS[1], 'aggregate', ARGV[2])
end
if layout ~= '4' and stored_layout == '4' then
  clear_split()
end
redis.call('HSET', KEYS[1],
  'revision', string.format('%.0f', next_revision),
  'updatedAt', ARGV[3],
  'layoutVersion', layout)
return {'WRITTEN', now, next_revision}
