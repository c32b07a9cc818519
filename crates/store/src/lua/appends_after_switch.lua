-- What a shard received since its routing boundary was last raised. KEYS[1] the shard stream, KEYS[2] its
-- routing key (same slot). Returns nil when no boundary was ever raised, else {floor, switchId, appended,
-- guarded}: entries appended after the switch point (entries-added now minus at the switch) and how many of
-- those came through guarded publish. O(1): counters, no scan.
local h = redis.call('HMGET', KEYS[2], 'floor', 'switchId', 'addedAtSwitch', 'guarded')
if not h[1] then
  return nil
end
local added = tonumber(h[3] or '0')
local now = added
if redis.call('EXISTS', KEYS[1]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then now = info[i + 1] end
  end
end
return {tonumber(h[1]), h[2] or '0-0', now - added, tonumber(h[4] or '0')}
