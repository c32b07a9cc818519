-- A user's token index: empty it and return what it listed. KEYS: the user's index.
local all = redis.call('ZRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1])
return all
