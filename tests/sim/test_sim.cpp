// payretry-sim's own tests: each fault is observed where a client would see it, on a real
// loopback socket (RST as ECONNRESET, refused connects, held requests, replays), and the
// truth endpoint counts what the provider really did.
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <clocale>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "faults.hpp"
#include "http_conn.hpp"
#include "json_lite.hpp"
#include "server.hpp"
#include "sim_client.hpp"

namespace {

using payretry_sim::Options;
using payretry_sim::Server;
using Clock = std::chrono::steady_clock;

using namespace simtest;

std::string payment(const std::string& order, long amount = 1000) {
  return R"({"order_id":")" + order + R"(","amount":)" + std::to_string(amount) + R"(,"currency":"eur"})";
}

std::vector<std::string> key_header(const std::string& key) { return {"Idempotency-Key: " + key}; }

// POST /v1/payments on a fresh connection.
Response post(uint16_t port, const std::string& order, const std::string& key = "", long amount = 1000) {
  Conn c(port);
  if (!c.ok()) {
    Response r;
    r.error = c.connect_error();
    return r;
  }
  return c.request("POST", "/v1/payments", payment(order, amount),
                   key.empty() ? std::vector<std::string>{} : key_header(key));
}

class Sim : public ::testing::Test {
 protected:
  virtual Options options() { return fast_options(); }
  void SetUp() override {
    sim_ = std::make_unique<Server>(options());
    port_ = sim_->port();
  }
  void TearDown() override { sim_->stop(); }
  std::unique_ptr<Server> sim_;
  uint16_t port_ = 0;
};

class TwoWorkers : public Sim {
 protected:
  Options options() override {
    Options o = fast_options();
    o.threads = 2;
    return o;
  }
};

// ---- HTTP basics ----------------------------------------------------------------------------

TEST_F(Sim, every_response_has_length_type_and_request_id) {
  Response r = get(port_, "/__admin/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"ok":true})");
  EXPECT_EQ(r.header("content-type"), "application/json");
  EXPECT_EQ(r.header("content-length"), std::to_string(r.body.size()));
  const std::string rid = r.header("request-id");
  EXPECT_TRUE(rid.size() > 4 && rid.rfind("req_", 0) == 0 &&
              rid.find_first_not_of("0123456789", 4) == std::string::npos)
      << rid;
  Response missing = get(port_, "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_FALSE(missing.header("request-id").empty());
}

TEST_F(Sim, keep_alive_serves_many_requests_on_one_connection) {
  Conn c(port_);
  std::string last_id;
  for (int i = 0; i < 5; ++i) {
    Response r = c.request("POST", "/v1/payments", payment("ka-" + std::to_string(i)));
    ASSERT_EQ(r.status, 200) << i;
    EXPECT_NE(r.header("request-id"), last_id);
    last_id = r.header("request-id");
  }
  EXPECT_EQ(sim_->total_charges(), 5);
}

TEST_F(Sim, pipelined_requests_are_answered_in_order) {
  Conn c(port_);
  std::string bytes;
  for (int i = 0; i < 3; ++i) {
    bytes += Conn::format("POST", "/v1/payments", payment("pipe-" + std::to_string(i), 100 + i), {});
  }
  bytes += Conn::format("GET", "/__admin/health", "", {});
  ASSERT_TRUE(c.send_raw(bytes));
  for (int i = 0; i < 3; ++i) {
    Response r = c.read();
    ASSERT_EQ(r.status, 200);
    Json j(r.body);
    EXPECT_EQ(j.str("order_id"), "pipe-" + std::to_string(i));
    EXPECT_EQ(j.num("amount"), 100 + i);
  }
  EXPECT_EQ(c.read().body, R"({"ok":true})");
}

TEST_F(Sim, expect_100_continue_gets_an_interim_response) {
  Conn c(port_);
  const std::string body = payment("expect");
  ASSERT_TRUE(c.send_raw("POST /v1/payments HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  Response interim = c.read();
  EXPECT_EQ(interim.status, 100);
  ASSERT_TRUE(c.send_raw(body));
  Response r = c.read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(sim_->charges_for("expect"), 1);
}

TEST_F(Sim, chunked_request_is_411_and_closes) {
  Conn c(port_);
  ASSERT_TRUE(c.send_raw("POST /v1/payments HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "5\r\nhello\r\n0\r\n\r\n"));
  Response r = c.read();
  EXPECT_EQ(r.status, 411);
  EXPECT_TRUE(c.read().eof);
}

TEST_F(Sim, body_over_4_mib_is_413) {
  Conn c(port_);
  ASSERT_TRUE(c.send_raw("POST /v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: 4194305\r\n\r\n"));
  EXPECT_EQ(c.read().status, 413);
  // Exactly 4 MiB is accepted (and rejected as a payment only because it is not JSON).
  Conn d(port_);
  const std::string big(4u << 20, ' ');
  ASSERT_TRUE(d.send_raw("POST /v1/payments HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                         std::to_string(big.size()) + "\r\n\r\n" + big));
  EXPECT_EQ(d.read().status, 400);
}

TEST_F(Sim, headers_over_16_kib_are_431) {
  Conn c(port_);
  ASSERT_TRUE(c.send_raw("GET /__admin/health HTTP/1.1\r\nX-Big: " + std::string(17 * 1024, 'a') + "\r\n\r\n"));
  EXPECT_EQ(c.read().status, 431);
}

TEST_F(Sim, connection_close_is_honoured) {
  Conn c(port_);
  Response r = c.request("GET", "/__admin/health", "", {"Connection: close"});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(lower(r.header("connection")), "close");
  EXPECT_TRUE(c.read().eof);
  Conn d(port_);  // HTTP/1.0 without keep-alive closes too
  ASSERT_TRUE(d.send_raw("GET /__admin/health HTTP/1.0\r\n\r\n"));
  EXPECT_EQ(d.read().status, 200);
  EXPECT_TRUE(d.read().eof);
}

TEST_F(Sim, garbage_is_400_and_not_counted_as_a_payment_request) {
  Conn c(port_);
  ASSERT_TRUE(c.send_raw(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 16)));
  EXPECT_EQ(c.read().status, 400);
  EXPECT_EQ(sim_->requests(), 0);
}

// ---- payments and idempotency ----------------------------------------------------------------

// RFC 9112 §3.2.2: a server accepts "http://host/path?query" as the request target (some SDKs,
// alipay-sdk-python among them, send it); it routes like its origin form.
TEST_F(Sim, absolute_form_targets_route_like_their_origin_form) {
  Conn c(port_);
  Response created = c.request("POST", "http://127.0.0.1:" + std::to_string(port_) + "/v1/payments",
                               R"({"order_id":"abs1","amount":5})", {"Idempotency-Key: kabs1"});
  ASSERT_EQ(created.status, 200) << created.body;
  Response listed = c.request("GET", "HTTPS://payments.example/v1/payments?order_id=abs1");
  EXPECT_EQ(listed.status, 200);
  EXPECT_EQ(Json(listed.body).num("total_count"), 1);
  EXPECT_EQ(sim_->charges_for("abs1"), 1);
  EXPECT_EQ(Conn(port_).request("GET", "http://127.0.0.1").status, 400);  // no path at all
}

TEST_F(Sim, same_key_replays_the_stored_response_without_a_second_charge) {
  Response first = post(port_, "o1", "k1");
  ASSERT_EQ(first.status, 200);
  Json j(first.body);
  EXPECT_EQ(j.str("object"), "payment");
  EXPECT_EQ(j.str("status"), "succeeded");
  EXPECT_EQ(j.str("order_id"), "o1");
  EXPECT_EQ(j.num("amount"), 1000);
  EXPECT_EQ(j.str("currency"), "eur");
  EXPECT_EQ(j.str("id").rfind("pi_", 0), 0u) << j.str("id");  // a PaymentIntent id, as Stripe's
  EXPECT_EQ(sim_->charge_ids_for("o1"), std::vector<std::string>{j.str("id")});
  EXPECT_EQ(first.header("idempotent-replayed"), "");

  Response again = post(port_, "o1", "k1");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("o1"), 1);
  EXPECT_EQ(sim_->requests(), 2);
  EXPECT_NE(sim_->stats_json().find(R"("replays":1)"), std::string::npos);
}

TEST_F(Sim, same_key_with_other_parameters_is_422_and_nothing_is_processed) {
  ASSERT_EQ(post(port_, "o2", "k2", 1000).status, 200);
  Response r = post(port_, "o2", "k2", 2000);
  EXPECT_EQ(r.status, 422);
  Json j(r.body);
  EXPECT_EQ(j.str("error.type"), "idempotency_error");
  EXPECT_EQ(j.str("error.code"), "idempotency_key_reused");
  EXPECT_FALSE(j.str("error.message").empty());
  EXPECT_EQ(sim_->charges_for("o2"), 1);
  // Not stored: the original body still replays.
  EXPECT_EQ(post(port_, "o2", "k2", 1000).header("idempotent-replayed"), "true");
}

TEST_F(Sim, without_a_key_every_request_is_a_new_charge) {
  EXPECT_EQ(post(port_, "dup").status, 200);
  EXPECT_EQ(post(port_, "dup").status, 200);
  EXPECT_EQ(post(port_, "single").status, 200);
  EXPECT_EQ(sim_->charges_for("dup"), 2);
  EXPECT_EQ(sim_->duplicate_orders(), 1);
  Json truth(get(port_, "/__admin/truth").body);
  EXPECT_EQ(truth.num("charges"), 3);
  EXPECT_EQ(truth.num("orders"), 2);
  EXPECT_EQ(truth.num("duplicates"), 1);
  EXPECT_EQ(truth.num("by_order.dup"), 2);
  EXPECT_EQ(truth.num("by_order.single"), 1);
  EXPECT_EQ(truth.num("requests"), 3);
  Json one(get(port_, "/__admin/truth?order_id=dup").body);
  EXPECT_EQ(one.str("order_id"), "dup");
  EXPECT_EQ(one.num("charges"), 2);
  EXPECT_EQ(cJSON_GetArraySize(one.at("ids")), 2);
  // No order id holds a NUL, and a JSON string cannot carry one past cJSON: asked for, it is
  // refused rather than answered about a shorter id.
  EXPECT_EQ(get(port_, "/__admin/truth?order_id=dup%00x").status, 400);
}

// A refused body is answered as Stripe answers one: error.code says what kind of problem,
// error.param which parameter, error.message both, so a client can fix it without guessing.
TEST_F(Sim, invalid_bodies_are_400_name_the_parameter_and_are_not_stored) {
  struct Case {
    std::string body, code, param, says;
  };
  const std::vector<Case> cases = {
      {"not json", "", "", "not a JSON object"},
      {R"([1,2])", "", "", "not a JSON object"},
      {R"({"amount":5})", "parameter_missing", "order_id", "order_id is required"},
      {R"({"order_id":7,"amount":5})", "parameter_invalid", "order_id", "order_id must be a string"},
      {R"({"order_id":"","amount":5})", "parameter_invalid_empty", "order_id", "order_id must not be empty"},
      {R"({"order_id":"x"})", "parameter_missing", "amount", "amount is required"},
      {R"({"order_id":"x","amount":0})", "parameter_invalid", "amount", "amount must be a positive whole number"},
      {R"({"order_id":"x","amount":1.5})", "parameter_invalid_integer", "amount", "minor units"},
      {R"({"order_id":"x","amount":"5"})", "parameter_invalid_integer", "amount", "minor units"},
      {R"({"order_id":"x","amount":5,"currency":7})", "parameter_invalid", "currency", "currency must be a string"},
  };
  for (const Case& k : cases) {
    Conn c(port_);
    Response r = c.request("POST", "/v1/payments", k.body, key_header("kv"));
    EXPECT_EQ(r.status, 400) << k.body;
    Json j(r.body);
    EXPECT_EQ(j.str("error.type"), "invalid_request_error") << r.body;
    EXPECT_EQ(j.str("error.code"), k.code) << r.body;
    EXPECT_EQ(j.str("error.param"), k.param) << r.body;
    EXPECT_NE(j.str("error.message").find(k.says), std::string::npos) << r.body;
  }
  // The key was never stored, so a valid body with it is processed, not a 422.
  Response ok = post(port_, "x", "kv", 5);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.header("idempotent-replayed"), "");
  EXPECT_EQ(sim_->total_charges(), 1);
}

TEST_F(Sim, lookups_by_id_and_by_order) {
  Response created = post(port_, "look", "kl");
  const std::string id = Json(created.body).str("id");
  Response byid = get(port_, "/v1/payments/" + id);
  EXPECT_EQ(byid.status, 200);
  EXPECT_EQ(byid.body, created.body);
  Response none = get(port_, "/v1/payments/pi_999999");
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(Json(none.body).str("error.code"), "resource_missing");
  // Only the exact id: not another provider's prefix, not a padded or signed number.
  ASSERT_EQ(id.rfind("pi_", 0), 0u) << id;
  const std::string n = id.substr(3);
  for (const std::string& other : {"pay_" + n, "ch_" + n, "pi_0" + n, "pi_+" + n, n, "pi_" + n + "x"}) {
    EXPECT_EQ(get(port_, "/v1/payments/" + other).status, 404) << other;
  }
  Response list = get(port_, "/v1/payments?order_id=look");
  EXPECT_EQ(list.status, 200);
  Json j(list.body);
  ASSERT_EQ(cJSON_GetArraySize(j.at("data")), 1);
  EXPECT_EQ(std::string(cJSON_GetObjectItem(cJSON_GetArrayItem(j.at("data"), 0), "id")->valuestring), id);
  Json empty(get(port_, "/v1/payments?order_id=nobody").body);
  EXPECT_EQ(cJSON_GetArraySize(empty.at("data")), 0);
}

// ---- The Stripe-shaped form endpoint (what stripe-python and stripe-go call) ----------------

std::vector<std::string> form_headers(const std::string& key) {
  std::vector<std::string> h{"Content-Type: application/x-www-form-urlencoded"};
  if (!key.empty()) h.push_back("Idempotency-Key: " + key);
  return h;
}

TEST_F(Sim, form_encoded_payment_intent_is_charged_once_per_key_and_looked_up_by_its_id) {
  const std::string body = "amount=1000&currency=usd&metadata%5Border_id%5D=form-1";
  Conn c(port_);
  Response first = c.request("POST", "/v1/payment_intents", body, form_headers("kf1"));
  ASSERT_EQ(first.status, 200) << first.body;
  Json j(first.body);
  const std::string id = j.str("id");
  EXPECT_EQ(id.rfind("pi_", 0), 0u) << id;
  EXPECT_EQ(j.str("latest_charge"), "ch_" + id.substr(3));  // the charge's id, same number
  EXPECT_EQ(j.str("metadata.order_id"), "form-1");
  Response again = c.request("POST", "/v1/payment_intents", body, form_headers("kf1"));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->total_charges(), 1);
  EXPECT_EQ(sim_->charges_for("form-1"), 1);
  // The same key with other parameters, as on the JSON endpoint.
  Response other = c.request("POST", "/v1/payment_intents", "amount=2000&currency=usd&metadata%5Border_id%5D=form-1",
                             form_headers("kf1"));
  EXPECT_EQ(other.status, 422);
  Response looked = c.request("GET", "/v1/payment_intents/" + id);
  EXPECT_EQ(looked.status, 200);
  EXPECT_EQ(Json(looked.body).str("id"), id);
  EXPECT_EQ(c.request("GET", "/v1/payment_intents/pi_999999").status, 404);
  EXPECT_EQ(c.request("GET", "/v1/payment_intents/ch_" + id.substr(3)).status, 404);
  EXPECT_EQ(c.request("GET", "/v1/payment_intents/pay_" + id.substr(3)).status, 404);
  EXPECT_EQ(sim_->charge_ids_for("form-1"), std::vector<std::string>{id});
  EXPECT_EQ(c.request("GET", "/v1/payment_intents/nonsense").status, 404);
}

// The form endpoint requires metadata[order_id] (the simulator records a payment under its
// order; Stripe itself would not ask for it), and says so in Stripe's words: the parameter in
// error.param, why in error.message.
TEST_F(Sim, malformed_form_bodies_are_400_name_the_parameter_and_charge_nothing) {
  struct Case {
    std::string body, code, param, says;
  };
  const std::vector<Case> cases = {
      {"amount=1000&currency=usd", "parameter_missing", "metadata[order_id]",
       "metadata[order_id] is required by payretry-sim"},
      {"amount=1000&metadata%5Border_id%5D=", "parameter_invalid_empty", "metadata[order_id]", "must not be empty"},
      {"metadata%5Border_id%5D=x", "parameter_missing", "amount", "amount is required"},
      {"amount=-5&metadata%5Border_id%5D=x", "parameter_invalid", "amount", "positive whole number"},
      {"amount=10.5&metadata%5Border_id%5D=x", "parameter_invalid_integer", "amount", "minor units"},
      {"amount=1000&metadata%5Border_id%5D=%zz", "", "", "% not followed by two hex digits"},
      {R"({"order_id":"json","amount":1000})", "parameter_missing", "amount", "amount is required"},  // JSON here
  };
  Conn c(port_);
  for (const Case& k : cases) {
    Response r = c.request("POST", "/v1/payment_intents", k.body, form_headers("kb-" + std::to_string(k.body.size())));
    EXPECT_EQ(r.status, 400) << k.body << " -> " << r.body;
    Json j(r.body);
    EXPECT_EQ(j.str("error.code"), k.code) << r.body;
    EXPECT_EQ(j.str("error.param"), k.param) << r.body;
    EXPECT_NE(j.str("error.message").find(k.says), std::string::npos) << r.body;
  }
  // The /v1/payments alias reads the order from order_id too, and names that field.
  Response alias = c.request("POST", "/v1/payments", "amount=1000", form_headers("kb-alias"));
  EXPECT_EQ(alias.status, 400);
  EXPECT_EQ(Json(alias.body).str("error.param"), "order_id") << alias.body;
  EXPECT_EQ(c.request("DELETE", "/v1/payment_intents/pi_1").status, 405);
  EXPECT_EQ(sim_->total_charges(), 0);
}

class WithLatency : public Sim {
 protected:
  Options options() override {
    Options o = fast_options();
    o.latency_ms = 300;
    return o;
  }
};

TEST_F(WithLatency, every_answer_waits_its_latency_without_holding_up_other_connections) {
  // Eight payments on eight connections at once: each answered after the
  // latency, all together (timers, not a sleeping worker thread).
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      if (post(port_, "lat-" + std::to_string(i), "kl-" + std::to_string(i)).status == 200) ++ok;
    });
  for (auto& t : threads) t.join();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_GE(ms, 300);           // a floor: the latency is honoured
  EXPECT_LT(ms, 8 * 300);       // not serialised behind each other (a correctness bound, not a timing target)
  EXPECT_EQ(sim_->total_charges(), 8);
  // Reconfigured at run time through the admin endpoint, and reported by it.
  Response now = admin_post(port_, "/__admin/config", R"({"latency_ms":0})");
  EXPECT_EQ(now.status, 200);
  EXPECT_EQ(Json(now.body).num("latency_ms"), 0);
  EXPECT_EQ(admin_post(port_, "/__admin/config", R"({"latency_ms":-1})").status, 400);
}

class WithApiKey : public Sim {
 protected:
  Options options() override {
    Options o = fast_options();
    o.api_key = "sk_test_123";
    o.key_header = "X-Request-Key";
    return o;
  }
};

TEST_F(WithApiKey, missing_or_wrong_bearer_is_401_and_the_key_header_is_configurable) {
  Conn c(port_);
  Response r = c.request("POST", "/v1/payments", payment("auth"), {"X-Request-Key: a1"});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Json(r.body).str("error.code"), "invalid_api_key");
  r = c.request("POST", "/v1/payments", payment("auth"), {"X-Request-Key: a1", "Authorization: Bearer nope"});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(sim_->charges_for("auth"), 0);
  r = c.request("POST", "/v1/payments", payment("auth"), {"X-Request-Key: a1", "Authorization: Bearer sk_test_123"});
  EXPECT_EQ(r.status, 200);
  r = c.request("POST", "/v1/payments", payment("auth"), {"X-Request-Key: a1", "Authorization: Bearer sk_test_123"});
  EXPECT_EQ(r.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("auth"), 1);
  // Idempotency-Key is just another header here: without the configured one, no dedup.
  r = c.request("POST", "/v1/payments", payment("auth"), {"Idempotency-Key: a1", "Authorization: Bearer sk_test_123"});
  EXPECT_EQ(r.header("idempotent-replayed"), "");
  EXPECT_EQ(sim_->charges_for("auth"), 2);
}

// ---- faults on the socket --------------------------------------------------------------------

TEST_F(Sim, reset_before_sends_rst_and_processes_nothing) {
  sim_->script("rb", {"reset_before"});
  Response r = post(port_, "rb", "krb");
  EXPECT_EQ(r.error, ECONNRESET);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(sim_->charges_for("rb"), 0);
  Response retry = post(port_, "rb", "krb");
  EXPECT_EQ(retry.status, 200);
  EXPECT_EQ(retry.header("idempotent-replayed"), "");  // nothing was stored before
  EXPECT_EQ(sim_->charges_for("rb"), 1);
}

TEST_F(Sim, lost_response_charges_then_resets_and_the_retry_replays) {
  sim_->script("lost", {"lost_response"});
  Response r = post(port_, "lost", "klost");
  EXPECT_EQ(r.error, ECONNRESET);
  EXPECT_EQ(sim_->charges_for("lost"), 1);
  Response retry = post(port_, "lost", "klost");
  EXPECT_EQ(retry.status, 200);
  EXPECT_EQ(retry.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("lost"), 1);
}

TEST_F(Sim, lost_response_without_a_key_leads_to_a_duplicate_on_retry) {
  sim_->script("nokey", {"lost_response"});
  EXPECT_EQ(post(port_, "nokey").error, ECONNRESET);
  EXPECT_EQ(post(port_, "nokey").status, 200);
  EXPECT_EQ(sim_->charges_for("nokey"), 2);
  EXPECT_EQ(sim_->duplicate_orders(), 1);
}

TEST_F(Sim, rate_limit_sends_retry_after_in_seconds_and_stores_nothing) {
  sim_->script("rl", {"429"});
  Response r = post(port_, "rl", "krl");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("retry-after"), "1");
  EXPECT_EQ(Json(r.body).str("error.code"), "rate_limit");
  EXPECT_EQ(sim_->charges_for("rl"), 0);
  Response retry = post(port_, "rl", "krl");
  EXPECT_EQ(retry.status, 200);
  EXPECT_EQ(retry.header("idempotent-replayed"), "");
}

TEST_F(Sim, rate_limit_date_is_an_imf_fixdate_in_the_future) {
  sim_->set_retry_after_s(3);
  sim_->script("rld", {"429_date"});
  const std::time_t before = std::time(nullptr);
  Response r = post(port_, "rld", "krld");
  EXPECT_EQ(r.status, 429);
  const std::string date = r.header("retry-after");
  std::tm tm{};
  const char* end = strptime(date.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  ASSERT_TRUE(end != nullptr && *end == '\0') << date;
  char again[64];
  std::strftime(again, sizeof again, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  EXPECT_EQ(date, again);  // exactly the IMF-fixdate shape: "Sun, 06 Nov 1994 08:49:37 GMT"
  const std::time_t when = timegm(&tm);
  EXPECT_GE(when, before + 3);
  EXPECT_LE(when, std::time(nullptr) + 3);
  EXPECT_EQ(sim_->charges_for("rld"), 0);
}

TEST(HttpDate, imf_fixdate_writes_english_names_whatever_the_locale) {
  EXPECT_EQ(payretry_sim::imf_fixdate(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");  // RFC 9110's
  EXPECT_EQ(payretry_sim::imf_fixdate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  // A host process (a test binary, a Python interpreter) may set a locale with other day and
  // month names; the dates the provider writes must not follow it. Checked where one exists.
  const std::string saved = std::setlocale(LC_TIME, nullptr);
  for (const char* name : {"de_DE.UTF-8", "fr_FR.UTF-8", "es_ES.UTF-8", "de_DE", "fr_FR"}) {
    if (!std::setlocale(LC_TIME, name)) continue;
    EXPECT_EQ(payretry_sim::imf_fixdate(784111777), "Sun, 06 Nov 1994 08:49:37 GMT") << name;
    break;
  }
  std::setlocale(LC_TIME, saved.c_str());
}

TEST_F(Sim, bad_gateway_and_unavailable_process_nothing) {
  sim_->script("gw", {"502", "503"});
  Response a = post(port_, "gw", "kgw");
  EXPECT_EQ(a.status, 502);
  EXPECT_EQ(Json(a.body).str("error.code"), "bad_gateway");
  Response b = post(port_, "gw", "kgw");
  EXPECT_EQ(b.status, 503);
  EXPECT_EQ(Json(b.body).str("error.code"), "service_unavailable");
  EXPECT_EQ(Json(b.body).str("error.type"), "api_error");
  EXPECT_EQ(sim_->charges_for("gw"), 0);
  EXPECT_EQ(post(port_, "gw", "kgw").header("idempotent-replayed"), "");
}

TEST_F(Sim, internal_error_commits_first_so_the_retry_replays_success) {
  sim_->script("ie", {"500"});
  Response r = post(port_, "ie", "kie");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(Json(r.body).str("error.code"), "internal_error");
  EXPECT_EQ(sim_->charges_for("ie"), 1);
  Response retry = post(port_, "ie", "kie");
  EXPECT_EQ(retry.status, 200);
  EXPECT_EQ(retry.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("ie"), 1);
}

TEST_F(Sim, decline_is_402_stored_and_replayed_without_a_charge) {
  sim_->script("dec", {"decline"});
  Response r = post(port_, "dec", "kdec");
  EXPECT_EQ(r.status, 402);
  Json j(r.body);
  EXPECT_EQ(j.str("error.type"), "card_error");
  EXPECT_EQ(j.str("error.code"), "card_declined");
  EXPECT_EQ(j.str("error.decline_code"), "insufficient_funds");
  Response again = post(port_, "dec", "kdec");
  EXPECT_EQ(again.status, 402);
  EXPECT_EQ(again.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("dec"), 0);
}

TEST_F(Sim, malformed_is_a_truncated_200_after_the_charge) {
  sim_->script("mal", {"malformed"});
  Response r = post(port_, "mal", "kmal");
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.body.empty());
  EXPECT_FALSE(Json(r.body).ok()) << r.body;
  EXPECT_EQ(sim_->charges_for("mal"), 1);
  Response retry = post(port_, "mal", "kmal");
  EXPECT_TRUE(Json(retry.body).ok());
  EXPECT_EQ(retry.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("mal"), 1);
}

TEST_F(Sim, faults_apply_to_replays_too) {
  ASSERT_EQ(post(port_, "rp", "krp").status, 200);
  sim_->script_key("krp", {"lost_response", "500", "malformed", "reset_before", "decline"});
  EXPECT_EQ(post(port_, "rp", "krp").error, ECONNRESET);
  EXPECT_EQ(post(port_, "rp", "krp").status, 500);
  Response mal = post(port_, "rp", "krp");
  EXPECT_EQ(mal.status, 200);
  EXPECT_FALSE(Json(mal.body).ok());
  EXPECT_EQ(post(port_, "rp", "krp").error, ECONNRESET);
  Response dec = post(port_, "rp", "krp");  // a done key keeps its outcome
  EXPECT_EQ(dec.status, 200);
  EXPECT_EQ(dec.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("rp"), 1);
}

TEST_F(Sim, slow_holds_the_key_in_progress_without_blocking_the_worker) {
  sim_->script("slow", {"slow"});
  Conn a(port_);
  const auto t0 = Clock::now();
  ASSERT_TRUE(a.send_raw(Conn::format("POST", "/v1/payments", payment("slow"), key_header("kslow"))));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  // The single worker still answers others while the request is held.
  Response health = get(port_, "/__admin/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(250));

  Response busy = post(port_, "slow", "kslow");
  EXPECT_EQ(busy.status, 409);
  EXPECT_EQ(Json(busy.body).str("error.code"), "idempotency_key_in_use");
  EXPECT_EQ(sim_->charges_for("slow"), 0);

  Response held = a.read();
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(290));
  EXPECT_EQ(held.status, 200);
  EXPECT_EQ(sim_->charges_for("slow"), 1);
  EXPECT_EQ(post(port_, "slow", "kslow").header("idempotent-replayed"), "true");
  EXPECT_NE(sim_->stats_json().find(R"("in_use_409":1)"), std::string::npos) << sim_->stats_json();
}

TEST_F(Sim, slow_on_a_done_key_holds_then_replays) {
  ASSERT_EQ(post(port_, "sd", "ksd").status, 200);
  sim_->script_key("ksd", {"slow"});
  const auto t0 = Clock::now();
  Response r = post(port_, "sd", "ksd");
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(290));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("idempotent-replayed"), "true");
  EXPECT_EQ(sim_->charges_for("sd"), 1);
}

TEST_F(Sim, slow_finishes_the_charge_even_when_the_client_gave_up) {
  sim_->script("gone", {"slow"});
  {
    Conn a(port_);
    ASSERT_TRUE(a.send_raw(Conn::format("POST", "/v1/payments", payment("gone"), key_header("kgone"))));
    Response r = a.read(100);
    EXPECT_TRUE(r.timeout);
  }  // the client closes its socket, as a timed-out client would
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(sim_->charges_for("gone"), 1);
  EXPECT_EQ(post(port_, "gone", "kgone").header("idempotent-replayed"), "true");
}

TEST_F(Sim, pipelined_requests_behind_a_slow_one_wait_their_turn) {
  sim_->script("s1", {"slow"});
  Conn c(port_);
  ASSERT_TRUE(c.send_raw(Conn::format("POST", "/v1/payments", payment("s1"), {}) +
                         Conn::format("POST", "/v1/payments", payment("s2"), {})));
  Response first = c.read();
  Response second = c.read();
  EXPECT_EQ(Json(first.body).str("order_id"), "s1");
  EXPECT_EQ(Json(second.body).str("order_id"), "s2");
}

// The listeners must close and come back whatever the number of workers.
void check_refuse(Server& sim) {
  const uint16_t port = sim.port();
  // An idle keep-alive connection is dropped by the outage too.
  Conn idle(port);
  ASSERT_EQ(idle.request("GET", "/__admin/health").status, 200);

  sim.script("ref", {"refuse"});
  Response r = post(port, "ref", "kref");
  EXPECT_EQ(r.error, ECONNRESET);
  int err = 0;
  Sock s = dial(port, &err);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(err, ECONNREFUSED);
  Response on_idle = idle.request("GET", "/__admin/health");
  EXPECT_TRUE(on_idle.eof || on_idle.error == ECONNRESET || on_idle.error == EPIPE) << on_idle.status;
  EXPECT_EQ(sim.charges_for("ref"), 0);

  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  // Several connections: with two SO_REUSEPORT listeners both must be back.
  for (int i = 0; i < 6; ++i) {
    Response again = post(port, "ref", "kref");
    EXPECT_EQ(again.status, 200) << i;
  }
  EXPECT_EQ(sim.charges_for("ref"), 1);

  // And again: a second outage on the reopened listeners.
  sim.script("ref2", {"refuse"});
  EXPECT_EQ(post(port, "ref2", "kref2").error, ECONNRESET);
  EXPECT_FALSE(dial(port, &err).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(post(port, "ref2", "kref2").status, 200);
}

void check_admin_outage(Server& sim) {
  const uint16_t port = sim.port();
  Response r = admin_post(port, "/__admin/outage", R"({"ms":200})");
  EXPECT_EQ(r.status, 200);
  int err = 0;
  EXPECT_FALSE(dial(port, &err).ok());
  EXPECT_EQ(err, ECONNREFUSED);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(get(port, "/__admin/health").status, 200);

  sim.outage(150);  // the C++ API does the same
  EXPECT_FALSE(dial(port, &err).ok());
  EXPECT_EQ(err, ECONNREFUSED);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(get(port, "/__admin/health").status, 200);
  EXPECT_EQ(admin_post(port, "/__admin/outage", R"({"ms":-1})").status, 400);
}

TEST_F(Sim, refuse_resets_then_refuses_connections_then_reopens) { check_refuse(*sim_); }
TEST_F(TwoWorkers, refuse_resets_then_refuses_connections_then_reopens) { check_refuse(*sim_); }
TEST_F(Sim, admin_outage_refuses_for_its_duration) { check_admin_outage(*sim_); }
TEST_F(TwoWorkers, admin_outage_refuses_for_its_duration) { check_admin_outage(*sim_); }

// ---- the seeded schedule --------------------------------------------------------------------

std::vector<int> run_schedule(Server& sim, int keys, int rounds) {
  std::vector<int> statuses;
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < keys; ++k) {
      Response resp = post(sim.port(), "ord-" + std::to_string(k), "sched-" + std::to_string(k));
      statuses.push_back(resp.status);
    }
  }
  return statuses;
}

TEST(Schedule, same_seed_meets_the_same_faults_and_matches_the_formula) {
  Options o = fast_options();
  o.seed = 7;
  o.faults = {{"503", 0.3}, {"502", 0.2}, {"429", 0.2}};
  Server a(o);
  Server b(o);
  o.seed = 8;
  Server c(o);
  const std::vector<int> sa = run_schedule(a, 20, 3);
  const std::vector<int> sb = run_schedule(b, 20, 3);
  const std::vector<int> sc = run_schedule(c, 20, 3);
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);

  payretry_sim::FaultMix mix = *payretry_sim::FaultMix::from_map(
      {{"503", 0.3}, {"502", 0.2}, {"429", 0.2}}, nullptr);
  std::size_t i = 0;
  int faulted = 0;
  for (uint64_t r = 0; r < 3; ++r) {
    for (int k = 0; k < 20; ++k, ++i) {
      const auto f = payretry_sim::choose_fault(mix, 7, "sched-" + std::to_string(k), r);
      const int expected = f == payretry_sim::Fault::service_unavailable ? 503
                           : f == payretry_sim::Fault::bad_gateway       ? 502
                           : f == payretry_sim::Fault::too_many_requests ? 429
                                                                          : 200;
      EXPECT_EQ(sa[i], expected) << "key " << k << " round " << r;
      faulted += expected != 200;
    }
  }
  EXPECT_GT(faulted, 20);  // ~70% of 60
  EXPECT_LT(faulted, 60);
}

TEST(Schedule, interleaving_across_threads_and_workers_does_not_change_it) {
  Options o = fast_options();
  o.threads = 2;
  o.seed = 99;
  o.faults = {{"503", 0.25}, {"500", 0.25}};
  Server sim(o);
  payretry_sim::FaultMix mix = *payretry_sim::FaultMix::from_map(o.faults, nullptr);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10; ++k) {
        const std::string key = "t" + std::to_string(t) + "-" + std::to_string(k);
        Conn c(sim.port());
        for (uint64_t n = 0; n < 4; ++n) {
          Response r = c.request("POST", "/v1/payments", payment("o" + key), key_header(key));
          const auto f = payretry_sim::choose_fault(mix, 99, key, n);
          const int want = f == payretry_sim::Fault::service_unavailable ? 503
                           : f == payretry_sim::Fault::internal_error    ? 500
                                                                        : 200;
          if (r.status != want) mismatches++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(sim.duplicate_orders(), 0);
  EXPECT_EQ(sim.requests(), 160);
}

TEST(Schedule, keyless_requests_count_per_order) {
  payretry_sim::FaultMix mix = *payretry_sim::FaultMix::from_map({{"503", 0.5}}, nullptr);
  Options o = fast_options();
  o.seed = 3;
  o.faults = {{"503", 0.5}};
  Server sim(o);
  for (uint64_t n = 0; n < 8; ++n) {
    const auto f = payretry_sim::choose_fault(mix, 3, "order-x", n);
    EXPECT_EQ(post(sim.port(), "order-x").status, f == payretry_sim::Fault::none ? 200 : 503) << n;
  }
}

TEST(Schedule, fault_names_are_exact) {
  const std::vector<std::string> want = {"none", "refuse", "reset_before", "lost_response",
                                         "slow", "429", "429_date", "502", "503", "500",
                                         "decline", "malformed", "401_after",
                                         "401_after_forgetting"};
  EXPECT_EQ(payretry_sim::fault_names(), want);
  Options o;
  o.faults = {{"explode", 0.1}};
  EXPECT_THROW(Server s(o), std::invalid_argument);
  o.faults = {{"503", 0.7}, {"502", 0.7}};
  EXPECT_THROW(Server s(o), std::invalid_argument);
}

// A seed names a schedule for good: a new fault is appended last, so a mix without it meets,
// key for key, the faults it met before (these were dealt before 401_after_forgetting existed).
TEST(Schedule, a_fault_appended_last_leaves_every_earlier_schedule_as_it_was) {
  std::map<std::string, double> m;
  for (const char* name : {"refuse", "reset_before", "lost_response", "slow", "429", "429_date", "502", "503",
                           "500", "decline", "malformed", "401_after"})
    m[name] = 0.07;
  const payretry_sim::FaultMix mix = *payretry_sim::FaultMix::from_map(m, nullptr);
  const std::vector<std::string> before = {
      "401_after", "decline", "reset_before", "429", "refuse", "malformed", "none", "429_date",
      "503", "decline", "malformed", "malformed", "lost_response", "slow", "401_after", "429_date",
      "reset_before", "reset_before", "500", "502", "decline", "none", "500", "502"};
  for (std::size_t k = 0; k < before.size(); ++k) {
    const auto f = payretry_sim::choose_fault(mix, 7, "k" + std::to_string(k), 0);
    EXPECT_EQ(std::string(payretry_sim::fault_name(f)), before[k]) << "key k" << k;
  }
}

// ---- admin ------------------------------------------------------------------------------------

TEST_F(Sim, admin_config_applies_and_names_what_it_rejects) {
  Response bad = admin_post(port_, "/__admin/config", R"({"faults":{"explode":0.1},"colour":"red"})");
  EXPECT_EQ(bad.status, 400);
  const std::string msg = Json(bad.body).str("error.message");
  EXPECT_NE(msg.find("explode"), std::string::npos) << msg;
  EXPECT_NE(msg.find("colour"), std::string::npos) << msg;
  EXPECT_EQ(admin_post(port_, "/__admin/config", R"({"slow_ms":-5})").status, 400);

  Response ok = admin_post(port_, "/__admin/config",
                           R"({"seed":12345678901,"faults":{"503":1.0},"slow_ms":10,"retry_after_s":2,"refuse_ms":20})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  Json j(ok.body);
  EXPECT_EQ(j.num("seed"), 12345678901.0);
  EXPECT_EQ(j.num("faults.503"), 1.0);
  EXPECT_EQ(j.num("slow_ms"), 10);
  EXPECT_EQ(j.num("retry_after_s"), 2);
  EXPECT_EQ(j.num("refuse_ms"), 20);
  // A seed is a uint64_t: one above 2^53 comes back digit for digit, not rounded to a double.
  Response big = admin_post(port_, "/__admin/config", R"({"seed":"18446744073709551615"})");
  ASSERT_EQ(big.status, 200) << big.body;
  EXPECT_NE(big.body.find(R"("seed":18446744073709551615,)"), std::string::npos) << big.body;
  ASSERT_EQ(admin_post(port_, "/__admin/config", R"({"seed":12345678901})").status, 200);
  EXPECT_EQ(post(port_, "cfg", "kcfg").status, 503);
  EXPECT_EQ(get(port_, "/__admin/health").status, 200);  // admin is never faulted
  ASSERT_EQ(admin_post(port_, "/__admin/config", R"({"faults":{}})").status, 200);
  EXPECT_EQ(post(port_, "cfg", "kcfg").status, 200);
}

TEST_F(Sim, admin_script_by_order_and_by_key) {
  Response bad = admin_post(port_, "/__admin/script", R"({"order_id":"s","faults":["503","boom"]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("boom"), std::string::npos);
  ASSERT_EQ(admin_post(port_, "/__admin/script", R"({"order_id":"so","faults":["502","none","503"]})").status, 200);
  ASSERT_EQ(admin_post(port_, "/__admin/script", R"({"key":"sk","faults":["429"]})").status, 200);
  EXPECT_EQ(post(port_, "so").status, 502);
  EXPECT_EQ(post(port_, "so").status, 200);
  EXPECT_EQ(post(port_, "so").status, 503);
  EXPECT_EQ(post(port_, "so").status, 200);  // script exhausted: the (empty) mix again
  EXPECT_EQ(post(port_, "other", "sk").status, 429);
  EXPECT_EQ(post(port_, "other", "sk").status, 200);
  EXPECT_THROW(sim_->script("x", {"nope"}), std::invalid_argument);
}

TEST_F(Sim, admin_reset_forgets_keys_charges_and_scripts) {
  ASSERT_EQ(post(port_, "r1", "kr1").status, 200);
  sim_->script("r2", {"503"});
  ASSERT_EQ(admin_post(port_, "/__admin/config", R"({"seed":5})").status, 200);
  ASSERT_EQ(admin_post(port_, "/__admin/reset", "").status, 200);
  EXPECT_EQ(sim_->total_charges(), 0);
  EXPECT_EQ(sim_->requests(), 0);
  EXPECT_EQ(post(port_, "r2").status, 200);  // script gone
  Response again = post(port_, "r1", "kr1");
  EXPECT_EQ(again.header("idempotent-replayed"), "");  // key gone
  Json cfg(get(port_, "/__admin/config").body);
  EXPECT_EQ(cfg.num("seed"), 5);  // config kept
}

TEST_F(Sim, admin_stats_count_faults_replays_and_conflicts) {
  sim_->script("st", {"503", "none"});
  post(port_, "st", "kst");
  post(port_, "st", "kst");
  post(port_, "st", "kst");
  post(port_, "st", "kst", 7);
  Json s(get(port_, "/__admin/stats").body);
  EXPECT_EQ(s.num("requests"), 4);
  EXPECT_EQ(s.num("faults.503"), 1);
  EXPECT_EQ(s.num("faults.none"), 3);
  EXPECT_EQ(s.num("replays"), 1);
  EXPECT_EQ(s.num("key_reused_422"), 1);
  EXPECT_EQ(s.num("in_use_409"), 0);
  EXPECT_EQ(s.num("repeat_creates"), 3) << "every create after the first with key kst";
  post(port_, "st2", "kst2");
  EXPECT_EQ(Json(get(port_, "/__admin/stats").body).num("repeat_creates"), 3) << "a new key is no repeat";
}

// ---- a real HTTP client -----------------------------------------------------------------------

size_t sink(char* p, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

TEST_F(Sim, libcurl_sees_the_faults_as_a_client_would) {
  struct Easy {
    CURL* h = curl_easy_init();
    ~Easy() { curl_easy_cleanup(h); }
  } easy;
  struct Headers {
    curl_slist* l = nullptr;
    ~Headers() { curl_slist_free_all(l); }
  } hdrs;
  hdrs.l = curl_slist_append(hdrs.l, "Idempotency-Key: kcurl");
  hdrs.l = curl_slist_append(hdrs.l, "Content-Type: application/json");
  const std::string url = sim_->base_url() + "/v1/payments";
  const std::string body = payment("curl");
  std::string out;
  curl_easy_setopt(easy.h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy.h, CURLOPT_HTTPHEADER, hdrs.l);
  curl_easy_setopt(easy.h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(easy.h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(easy.h, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(easy.h, CURLOPT_TIMEOUT_MS, 3000L);

  sim_->script("curl", {"lost_response", "none", "none"});
  const CURLcode lost = curl_easy_perform(easy.h);
  EXPECT_TRUE(lost == CURLE_RECV_ERROR || lost == CURLE_GOT_NOTHING) << curl_easy_strerror(lost);
  for (int i = 0; i < 2; ++i) {
    out.clear();
    ASSERT_EQ(curl_easy_perform(easy.h), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(easy.h, CURLINFO_RESPONSE_CODE, &status);
    EXPECT_EQ(status, 200);
    EXPECT_TRUE(Json(out).ok());
  }
  long connects = -1;
  curl_easy_getinfo(easy.h, CURLINFO_NUM_CONNECTS, &connects);
  EXPECT_EQ(connects, 0);  // the last request reused the kept-alive connection
  EXPECT_EQ(sim_->charges_for("curl"), 1);
}

// ---- the body scanner (hot path, replaces a DOM parse) ----------------------------------------

TEST(JsonLite, picks_top_level_fields_and_decodes_escapes) {
  payretry_sim::PaymentFields f;
  ASSERT_TRUE(payretry_sim::scan_payment_json(
      R"( {"card":{"order_id":"nested","amount":1},"order\u005fid":"o\u00e9\n\"x\"","amount":1e3,)"
      R"("currency":"eur","tags":[1,-2.5E-3,true,false,null,[],{}],"order_id":"second"} )",
      &f));
  EXPECT_TRUE(f.has_order_id);
  EXPECT_EQ(f.order_id, "o\xc3\xa9\n\"x\"");  // first top-level occurrence wins
  EXPECT_TRUE(f.has_amount);
  EXPECT_EQ(f.amount, 1000);
  EXPECT_TRUE(f.currency_is_string);
  EXPECT_EQ(f.currency, "eur");
  payretry_sim::PaymentFields g;
  ASSERT_TRUE(payretry_sim::scan_payment_json(R"({"order_id":"\ud83d\ude00","amount":"5","currency":3})", &g));
  EXPECT_EQ(g.order_id, "\xf0\x9f\x98\x80");
  EXPECT_FALSE(g.has_amount);
  EXPECT_TRUE(g.has_currency);
  EXPECT_FALSE(g.currency_is_string);
}

TEST(JsonLite, rejects_what_a_strict_parser_rejects) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  for (const std::string& bad : {std::string(""), std::string("[]"), std::string("\"s\""),
                                std::string("{"), std::string("{\"a\":1,}"), std::string("{\"a\" 1}"),
                                std::string("{\"a\":1} x"), std::string("{\"a\":01}"),
                                std::string("{\"a\":1.}"), std::string("{\"a\":-}"),
                                std::string("{\"a\":.5}"), std::string("{\"a\":tru}"),
                                std::string("{\"a\":\"\\x\"}"), std::string("{\"a\":\"\\ud800\"}"),
                                std::string("{\"a\":\"tab\there\"}"), std::string("{\"a\":[1,]}"),
                                std::string("{\"a\":\"open}"), std::string("{\"a\":") + deep + "}",
                                std::string("{'a':1}")}) {
    payretry_sim::PaymentFields f;
    EXPECT_FALSE(payretry_sim::scan_payment_json(bad, &f)) << bad;
  }
}

// ---- lifecycle -------------------------------------------------------------------------------

TEST(Lifecycle, a_taken_port_throws_and_stop_is_idempotent) {
  Sock taken(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(taken.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(taken.get(), 1), 0);
  socklen_t len = sizeof sa;
  getsockname(taken.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  Options o;
  o.port = ntohs(sa.sin_port);
  EXPECT_THROW(Server s(o), std::runtime_error);

  Options lo;
  lo.host = "0.0.0.0";
  EXPECT_THROW(Server s(lo), std::invalid_argument);

  Server s(fast_options());
  EXPECT_GT(s.port(), 0);
  s.stop();
  s.stop();
  int err = 0;
  EXPECT_FALSE(dial(s.port(), &err).ok());
}

TEST_F(TwoWorkers, concurrent_clients_with_keys_never_duplicate) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Conn c(port_);
      for (int i = 0; i < 50; ++i) {
        const std::string order = "c" + std::to_string(t) + "-" + std::to_string(i % 25);
        Response r = c.request("POST", "/v1/payments", payment(order), key_header("k" + order));
        ok += r.status == 200;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 400);
  EXPECT_EQ(sim_->total_charges(), 200);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
  EXPECT_EQ(sim_->requests(), 400);
}

}  // namespace
