-- wrk script for payretry-sim: POST /v1/payments with a JSON body and a unique
-- Idempotency-Key (and order id) per request, built from the wrk thread id and a counter.
-- usage: wrk -t1 -c64 -d10s -s tests/bench/sim_post.lua http://127.0.0.1:PORT

local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

local counter = 0
local headers = { ["Content-Type"] = "application/json" }
local prefix

function init(args)
  prefix = "b" .. tostring(tid or 1) .. "-" .. tostring(os.time()) .. "-"
end

function request()
  counter = counter + 1
  local id = prefix .. counter
  headers["Idempotency-Key"] = "key-" .. id
  local body = '{"order_id":"order-' .. id .. '","amount":1000,"currency":"eur"}'
  return wrk.format("POST", "/v1/payments", headers, body)
end
