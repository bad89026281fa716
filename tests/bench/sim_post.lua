-- wrk script for payretry-sim: POST /v1/payments with a JSON body and a unique
-- Idempotency-Key (and order id) per request, built from the wrk thread id and a counter.
-- usage: wrk -t1 -c64 -d10s -s tests/bench/sim_post.lua http://127.0.0.1:PORT/v1/payments
--
-- The request is assembled by hand rather than with wrk.format(): this script runs once per
-- request inside wrk's own thread, and a cheap script keeps wrk from being the bottleneck.

local threads = {}

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

local counter = 0
local head, prefix

function init(args)
  prefix = "b" .. tostring(tid or 1) .. "-" .. tostring(os.time()) .. "-"
  head = "POST /v1/payments HTTP/1.1\r\nHost: " .. wrk.host .. ":" .. tostring(wrk.port) ..
         "\r\nContent-Type: application/json\r\nIdempotency-Key: key-"
end

function request()
  counter = counter + 1
  local id = prefix .. counter
  local body = '{"order_id":"order-' .. id .. '","amount":1000,"currency":"eur"}'
  return head .. id .. "\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
end
