-- Deletes a shard stream (KEYS[1]) only if every Redis consumer group on it still has nothing pending and
-- either a lag of 0 or a last-delivered id at or past the stream's last id, atomically, so a stale
-- producer's late write is never deleted unread. Returns 0 when there is no such stream, -1 when a group
-- has not consumed everything (kept), otherwise DEL's reply (1).
local ok, groups = pcall(redis.call, 'XINFO', 'GROUPS', KEYS[1])
if not ok then return 0 end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local last = nil
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then last = info[i + 1] end
end
local function at_or_past(a, b)
  if type(a) ~= 'string' or type(b) ~= 'string' then return false end
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if not am or not bm then return false end
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am > bm or (am == bm and as >= bs)
end
for _, g in ipairs(groups) do
  local pending, lag, delivered = nil, nil, nil
  for i = 1, #g, 2 do
    if g[i] == 'pending' then pending = g[i + 1] end
    if g[i] == 'lag' then lag = g[i + 1] end
    if g[i] == 'last-delivered-id' then delivered = g[i + 1] end
  end
  if pending ~= 0 then return -1 end
  if lag ~= 0 and not at_or_past(delivered, last) then return -1 end
end
return redis.call('DEL', KEYS[1])
