-- wrk script for scripts/bench-serve.sh: POSTs decision requests to /v1/decide, alternating a
-- built-in policy (standard: best-effort) and a WebAssembly component (robots).
-- WRK_POLICY=builtin|component|mixed picks which (default mixed).
local builtin = '{"policy": "standard", "request": {"type": "upsert", "dispatched": true}, "reason": "KV_LOCKED"}'
local component = '{"policy": "robots", "request": {"type": "get", "client_context": {"isRobotRequest": "true"}}, "reason": "KV_TEMPORARY_FAILURE"}'
local which = os.getenv("WRK_POLICY") or "mixed"
local n = 0

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

request = function()
  n = n + 1
  local body
  if which == "builtin" or (which == "mixed" and n % 2 == 0) then
    body = builtin
  else
    body = component
  end
  return wrk.format(nil, "/v1/decide", nil, body)
end

-- Any non-200 answer is counted by wrk as a non-2xx response and reported.
