-- prelude.lua: prepended to every group script (cas, heartbeat, delete, create).
-- Reads the Redis server clock once, so every lease decision of one call uses the same instant
-- and all coordinator replicas judge leases by the same clock, and defines the revision guard
-- that every compare-and-set script starts with. KEYS[1] is always the metadata hash.
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

-- Returns the stored revision if it equals `expected`; otherwise nil and the reply to send:
-- {'CONFLICT', now, current} on a mismatch, {'CONFLICT', now, -1} if the group does not exist,
-- {'CORRUPT', now, detail} if the revision field is missing or not a positive decimal integer.
local function check_revision(expected)
  local raw = redis.call('HGET', KEYS[1], 'revision')
  if not raw then
    if redis.call('EXISTS', KEYS[1]) == 1 then
      return nil, {'CORRUPT', now, 'the revision field is missing'}
    end
    return nil, {'CONFLICT', now, -1}
  end
  if not string.match(raw, '^[1-9]%d*$') then
    return nil, {'CORRUPT', now, 'the revision field is not a positive decimal integer: ' .. raw}
  end
  local current = tonumber(raw)
  if current ~= tonumber(expected) then
    return nil, {'CONFLICT', now, current}
  end
  return current, nil
end

