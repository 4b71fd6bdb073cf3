-- wrk script for bench/serve-peers: every request POSTs the same KServe v2 JSON body, read from
-- the file named after `--` (wrk -s infer.lua URL -- BODY.json). Each thread counts responses
-- whose status is not 200; done() prints one line that bench/serve-peers parses:
--   SERVE_PEERS requests=N duration_us=D p50_us=.. p90_us=.. p99_us=.. max_us=.. non200=N
--     connect=N read=N write=N timeout=N

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  local path = args[1]
  if path == nil then
    error("infer.lua: no body file (wrk -s infer.lua URL -- BODY.json)")
  end
  local f = assert(io.open(path, "rb"))
  wrk.method = "POST"
  wrk.body = f:read("*a")
  f:close()
  wrk.headers["Content-Type"] = "application/json"
  non200 = 0
end

function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do
    bad = bad + t:get("non200")
  end
  local e = summary.errors
  io.write(string.format(
    "SERVE_PEERS requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non200=%d " ..
    "connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, bad, e.connect, e.read, e.write, e.timeout))
end
