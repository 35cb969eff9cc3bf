-- wrk with pre-signed, unique requests (bench/run uses it; signing in Lua needs an HMAC wrk lacks).
--
--   bench-loadgen dump --url URL --secret S --count N --out FILE
--   wrk -t T -c C -d 5s -s bench/wrk/signed.lua URL -- FILE T
--
-- FILE holds N requests, each "<length>\n<raw HTTP/1.1 request>" (Host, path, Standard Webhooks
-- headers and signature, body). Thread k of T sends the k-th contiguous slice in order, so no two
-- threads send the same webhook-id; a thread that runs past the end of its slice starts it again
-- (ids then repeat: `wraps` in the result says how often, bench/run treats wraps > 0 as invalid).
-- No response() callback: wrk then parses nothing in Lua and runs at full speed. done() prints one
-- line "WRKJSON {...}" on stdout for bench/run.

local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local path, nthreads = args[1], tonumber(args[2] or "1")
  local f = assert(io.open(path, "rb"))
  local all = {}
  while true do
    local n = f:read("*n")
    if not n then break end
    f:read(1) -- the newline after the length
    all[#all + 1] = f:read(n)
  end
  f:close()
  local per = math.floor(#all / nthreads)
  local first = id * per + 1
  local last = (id == nthreads - 1) and #all or (first + per - 1)
  reqs = {}
  for i = first, last do reqs[#reqs + 1] = all[i] end
  all = nil
  collectgarbage()
  idx = 0
  wraps = 0
  if #reqs == 0 then error("signed.lua: no requests for thread " .. id) end
end

function request()
  idx = idx + 1
  if idx > #reqs then
    idx = 1
    wraps = wraps + 1
  end
  return reqs[idx]
end

function done(summary, latency, requests)
  local w = 0
  for _, t in ipairs(threads) do w = w + (t:get("wraps") or 0) end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"status_errors":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d,' ..
    '"p50_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f,"wraps":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.status, e.connect, e.read, e.write,
    e.timeout, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, w))
end
