-- wrk script for bench/serve.py: E2B's /execute, one context per client.
-- Run with as many threads as connections (-t N -c N), so that each
-- connection is its thread's; CONTEXT_1 .. CONTEXT_N name the contexts and
-- CELLEXEC_TOKEN the token.  A response is counted bad unless it is a 200
-- holding the cell's stdout line; done() prints "bad N" for serve.py.
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("context", os.getenv("CONTEXT_" .. #threads))
end

function init(args)
  local body = '{"code": "print(\'hello\')\\n1 + 1", "context_id": "' .. context .. '"}'
  cell = wrk.format("POST", "/execute",
                    { ["X-Access-Token"] = os.getenv("CELLEXEC_TOKEN"),
                      ["Content-Type"] = "application/json" }, body)
  bad = 0
end

function request()
  return cell
end

function response(status, headers, body)
  if status ~= 200 or not body:find('"text":"hello\\n"', 1, true) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + thread:get("bad")
  end
  io.write(string.format("bad %d\n", total))
end
