-- wrk script for bench/serve-peers: POSTs KServe v2 JSON bodies to the URL, taking them in turn
-- from the file named after `--` (wrk -s infer.lua URL -- BODIES.tsv), one per line as
-- "LENGTH<TAB>JSON", starting again at the first after the last. Each thread counts the requests
-- it sent and their tokens (the sum of their lengths) and the responses whose status is not 200;
-- done() prints one line that bench/serve-peers parses:
--   SERVE_PEERS requests=N duration_us=D p50_us=.. p90_us=.. p99_us=.. max_us=.. non200=N
--     connect=N read=N write=N timeout=N sent=N sent_tokens=N

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  local path = args[1]
  if path == nil then
    error("infer.lua: no bodies file (wrk -s infer.lua URL -- BODIES.tsv)")
  end
  bodies, lengths = {}, {}
  for line in io.lines(path) do
    local n, body = line:match("^(%d+)\t(.+)$")
    if n == nil then
      error("infer.lua: " .. path .. ": a line is not LENGTH<TAB>JSON")
    end
    table.insert(lengths, tonumber(n))
    table.insert(bodies, body)
  end
  if #bodies == 0 then
    error("infer.lua: " .. path .. " has no bodies")
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  nextbody, sent, sent_tokens, non200 = 1, 0, 0, 0
end

function request()
  local i = nextbody
  nextbody = nextbody % #bodies + 1
  sent = sent + 1
  sent_tokens = sent_tokens + lengths[i]
  return wrk.format(nil, nil, nil, bodies[i])
end

function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
  end
end

function done(summary, latency, requests)
  local bad, n, tokens = 0, 0, 0
  for _, t in ipairs(threads) do
    bad = bad + t:get("non200")
    n = n + t:get("sent")
    tokens = tokens + t:get("sent_tokens")
  end
  local e = summary.errors
  io.write(string.format(
    "SERVE_PEERS requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d non200=%d " ..
    "connect=%d read=%d write=%d timeout=%d sent=%d sent_tokens=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, bad, e.connect, e.read, e.write, e.timeout, n, tokens))
end
