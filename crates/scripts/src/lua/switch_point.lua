-- switch_point.lua: prepended to the scripts that raise a shard's routing boundary (guarded_append.lua,
-- raise_routing_floor.lua). KEYS[1] is the shard stream, KEYS[2] its routing key (same slot).
-- Raises the boundary to `floor` and records the switch point in the same step: the stream's last id and
-- entries-added now (every entry appended later is newer than the boundary), and a fresh count of guarded
-- appends. The annotation of an older switch (`scale`) stays; its version tells it apart.
local function raise_boundary(floor)
  local last, added = '0-0', 0
  if redis.call('EXISTS', KEYS[1]) == 1 then
    local info = redis.call('XINFO', 'STREAM', KEYS[1])
    for i = 1, #info, 2 do
      if info[i] == 'last-generated-id' then last = info[i + 1] end
      if info[i] == 'entries-added' then added = info[i + 1] end
    end
  end
  redis.call('HSET', KEYS[2], 'floor', floor, 'switchId', last, 'addedAtSwitch', added, 'guarded', 0)
end

