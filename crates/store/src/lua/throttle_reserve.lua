-- Sign-in throttle: check the budgets and count one attempt as a failure, atomically.
-- KEYS: pair, address, username (one hash tag). ARGV: now ms, failures-before-delay,
-- max-failures-per-address, max-failures-per-username, initial delay ms, max delay ms, window ms.
-- Returns {0} when the attempt is reserved, or {wait ms, reason} (1 pair, 2 address, 3 username ceiling).
local now = tonumber(ARGV[1])
local pair_free, addr_free, ceiling = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local initial, max, window = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local pn = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
local pnext = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
local an = tonumber(redis.call('HGET', KEYS[2], 'n') or '0')
local anext = tonumber(redis.call('HGET', KEYS[2], 'next') or '0')
local un = tonumber(redis.call('GET', KEYS[3]) or '0')
if an > 0 then
  local wait, why = 0, 0
  if pnext > now then wait, why = pnext - now, 1 end
  if anext > now and anext - now > wait then wait, why = anext - now, 2 end
  if un >= ceiling and pn > 0 then
    local t = redis.call('PTTL', KEYS[3])
    if t > wait then wait, why = t, 3 end
  end
  if why > 0 then return {wait, why} end
end
local function delay(n, free)
  if n < free then return 0 end
  return math.floor(math.min(initial * math.pow(2, math.min(n - free, 40)), max))
end
pn, an = pn + 1, an + 1
local pd, ad = delay(pn, pair_free), delay(an, addr_free)
if pd > 0 then pnext = now + pd end
if ad > 0 then anext = now + ad end
redis.call('HSET', KEYS[1], 'n', pn, 'next', pnext, 'delay', pd)
redis.call('PEXPIRE', KEYS[1], window)
redis.call('HSET', KEYS[2], 'n', an, 'next', anext, 'delay', ad)
redis.call('PEXPIRE', KEYS[2], window)
if redis.call('INCR', KEYS[3]) == 1 or redis.call('PTTL', KEYS[3]) < 0 then
  redis.call('PEXPIRE', KEYS[3], window)
end
return {0}
