-- wrk script for scripts/bench-serve.sh: POSTs decision requests to /v1/decide.
-- WRK_POLICY picks the body:
--   builtin    the built-in `standard` (best effort): an upsert after KV_LOCKED, answered retry
--   component  the component `robots` asked the same, answered the same (it hands a request
--              that is not a robot's to best effort): what the component itself costs
--   robots     the component `robots` asked about a robot's get, answered a cancellation with
--              its error context (a larger answer)
--   mixed      builtin and component alternating (the default)
local builtin = '{"policy": "standard", "request": {"type": "upsert", "dispatched": true}, "reason": "KV_LOCKED"}'
local component = '{"policy": "robots", "request": {"type": "upsert", "dispatched": true}, "reason": "KV_LOCKED"}'
local robots = '{"policy": "robots", "request": {"type": "get", "client_context": {"isRobotRequest": "true"}}, "reason": "KV_TEMPORARY_FAILURE"}'
local which = os.getenv("WRK_POLICY") or "mixed"
local n = 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

request = function()
  n = n + 1
  local body
  if which == "builtin" or (which == "mixed" and n % 2 == 0) then
    body = builtin
  elseif which == "robots" then
    body = robots
  else
    body = component
  end
  return wrk.format(nil, "/v1/decide", nil, body)
end

-- Any non-200 answer is counted by wrk as a non-2xx response and reported.
