// A request to its answer: the admin endpoints, PayPal's token endpoint, the gate (request
// authentication), lookups and payments, and the framing of each answer (Retry-After, replay
// markers, answer signatures).
#include "worker.hpp"

#include <algorithm>
#include <ctime>

#include "gate.hpp"
#include "profiles.hpp"
#include "server_core.hpp"

namespace payretry_sim {

namespace {

// Stripe's answer to a create whose body is not form fields, worded as its mock server does.
std::string stripe_wrong_content_type(std::string_view was) {
  std::string body =
      R"({"error":{"message":"Request's `Content-Type` didn't match the path's expected media type. )"
      R"(Expected: `application/x-www-form-urlencoded`. Was: `)";
  for (char ch : was)
    if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\' && ch != '`') body.push_back(ch);
  body += R"(`.","type":"invalid_request_error"}})";
  return body;
}

bool is_form(std::string_view content_type) {
  const std::string_view form = "application/x-www-form-urlencoded";
  return content_type.size() >= form.size() && iequals(content_type.substr(0, form.size()), form);
}

// Signatures and their freshness checks use the wall clock, like the providers'.
int64_t unix_now_s() { return static_cast<int64_t>(std::time(nullptr)); }

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

}  // namespace

void Worker::refresh_config() {
  const uint64_t v = srv_.state.config_version();
  if (v != cfg_version_) {
    cfg_ = srv_.state.config();
    cfg_version_ = v;
  }
}

void Worker::append_reply(Conn* c, const Reply& r, bool close, bool provider) {
  frame_reply(c->out, r, close, provider);
  if (close) c->close_after = true;
}

Worker::Next Worker::answer_later(Conn* c, bool close, bool rst, int delay_ms) {
  c->held = true;  // no pipelined request overtakes this one
  Timer t;
  t.when = now_ns() + static_cast<int64_t>(delay_ms < 0 ? cfg_.latency_ms : delay_ms) * 1000000;
  t.conn_key = key_of(*c);
  t.close = close;
  t.delayed = true;
  t.rst = rst;
  if (!rst) frame_reply(t.framed, reply_, close, true);
  add_timer(std::move(t));
  return Next::stop;
}

void Worker::frame_reply(std::string& out, const Reply& r, bool close, bool provider) {
  extra_.clear();
  if (r.retry_after_s >= 0) {
    extra_.append("Retry-After: ");
    if (r.retry_after_date) {
      extra_.append(imf_fixdate(static_cast<int64_t>(std::time(nullptr)) + r.retry_after_s));
    } else {
      append_int(extra_, r.retry_after_s);
    }
    extra_.append("\r\n");
  }
  if (r.replayed) extra_.append("Idempotent-Replayed: true\r\n");
  if (r.transient) extra_.append("transient-error: true\r\n");
  if (!r.headers.empty()) extra_.append(r.headers);
  std::string_view body = r.body;
  if (provider && cfg_.keys) {
    signed_body_.assign(r.body);
    sign_answer(cfg_, unix_now_s(), signed_body_, extra_);
    body = signed_body_;
  }
  if (r.cut_in_half) body = body.substr(0, std::max<std::size_t>(1, body.size() / 2));
  append_response(out, r.status, body, extra_, srv_.next_request_id.fetch_add(1), close);
}

Worker::Next Worker::handle_request(Conn* c, const Request& req) {
  refresh_config();
  reply_.clear();
  const bool close = !req.keep_alive || c->read_eof;
  if (starts_with(req.path, "/__admin/")) return answer_admin(c, req, close);

  const Profile& prof = *cfg_.profile;
  // Operations first: their paths sit under the create and lookup paths
  // (/v2/checkout/orders/{id}/capture, /payments/{id}/refunds, ...).
  OpTarget op;
  Route routed = route_operation(prof, req.method, req.path, &op) ? Route::operation : route(prof, req.method, req.path);
  if (routed == Route::oauth2_token) {
    // Never faulted, nor delayed by latency_ms: the faults are about payments, not
    // credentials. oauth2_delay_ms is the token endpoint's own slowness.
    if (cfg_.oauth2_delay_ms != 0) return hold_token_request(c, req, close);
    srv_.state.tokens().issue(cfg_.oauth2, req.header("Authorization"), req.header("Content-Type"),
                              req.body, &reply_.status, &reply_.body);
    append_reply(c, reply_, close);
    return Next::more;
  }
  std::string_view body = req.body;
  if (routed == Route::create || routed == Route::create_form || routed == Route::lookup ||
      routed == Route::gateway || routed == Route::operation) {
    if (!cfg_.hmac_secret.empty()) {
      const bool good = signature_ok(cfg_, req, reply_);
      srv_.state.count_signature(good);
      if (!good) {
        srv_.state.count_auth_refused();
        if (cfg_.latency_ms > 0) return answer_later(c, close, false);
        append_reply(c, reply_, close);
        return Next::more;
      }
    }
    if (!admit(cfg_, srv_.state.tokens(), req, routed, unix_now_s(), &routed, &body, gate_body_, reply_, &op)) {
      srv_.state.count_auth_refused();
      if (cfg_.latency_ms > 0) return answer_later(c, close, false);
      append_reply(c, reply_, close);
      return Next::more;
    }
  }
  BodyFormat format = BodyFormat::json;
  switch (routed) {
    case Route::create:
      // Stripe's v1 API takes form bodies only; the /v1/payments alias takes either, so
      // clients of the other encodings can still drive the Stripe mode.
      if (prof.id == ProfileId::stripe && is_form(req.header("Content-Type"))) format = BodyFormat::form_alias;
      break;
    case Route::create_form:
      if (!is_form(req.header("Content-Type"))) {
        // What Stripe answers a JSON create (its mock server says the same).
        reply_.clear();
        reply_.status = 400;
        reply_.body = stripe_wrong_content_type(req.header("Content-Type"));
        append_reply(c, reply_, close);
        return Next::more;
      }
      format = BodyFormat::form;
      break;
    case Route::lookup:
      if (!srv_.state.authorized(cfg_, cfg_.api_keys.empty() ? std::string_view{}
                                                             : req.header("Authorization"))) {
        set_canned(reply_, prof.unauthorized);
      } else {
        lookup(prof, srv_.state, req.method, req.path, req.query, body, request_scope(req), reply_);
      }
      if (cfg_.latency_ms > 0) return answer_later(c, close, false);
      append_reply(c, reply_, close);
      return Next::more;
    case Route::operation:
      return answer_operation(c, req, body, op, close);
    case Route::method_not_allowed:
      set_canned(reply_, prof.method_not_allowed);
      append_reply(c, reply_, close);
      return Next::more;
    case Route::gateway:       // admit() made it a create or a lookup
    case Route::oauth2_token:  // answered above
    case Route::no_route:
      set_canned(reply_, prof.no_route);
      append_reply(c, reply_, close);
      return Next::more;
  }
  return answer_payment(c, req, body, format, close);
}

std::string_view Worker::request_scope(const Request& req) {
  // Headers are looked for only when they can matter: the one-account hot path reads none.
  scope_of(cfg_, cfg_.api_keys.size() > 1 ? req.header("Authorization") : std::string_view{},
           cfg_.scope_header.empty() ? std::string_view{} : req.header(cfg_.scope_header), scope_);
  return scope_;
}

Worker::Next Worker::hold_token_request(Conn* c, const Request& req, bool close) {
  srv_.state.count_token_request_held();
  c->held = true;  // no pipelined request overtakes this one
  // Closed as soon as the client closes it (worker_io.cpp): a client that gave up gets nothing.
  c->parked = true;
  // A token endpoint that never answers: the request stays until the client gives up.
  if (cfg_.oauth2_delay_ms < 0) return Next::stop;
  Timer t;
  t.when = now_ns() + static_cast<int64_t>(cfg_.oauth2_delay_ms) * 1000000;
  t.conn_key = key_of(*c);
  t.close = close;
  t.token = true;
  t.token_authorization.assign(req.header("Authorization"));
  t.token_content_type.assign(req.header("Content-Type"));
  t.token_body.assign(req.body);
  add_timer(std::move(t));
  return Next::stop;
}

Worker::Next Worker::answer_admin(Conn* c, const Request& req, bool close) {
  gate_generation_ = 0;
  handle_admin(srv_.state, *this, req.method, req.path, req.query, req.body, reply_);
  append_reply(c, reply_, close, /*provider=*/false);
  if (gate_generation_) {
    // The reply to an outage request leaves only once every worker closed its idle
    // connections, so the caller's next request meets the outage.
    c->held = true;
    c->gate_output = true;
    deferred_.push_back({gate_generation_, key_of(*c), false});
    gate_generation_ = 0;
    return Next::stop;
  }
  return Next::more;
}

bool Worker::header_key(const Request& req, std::string_view* key) const {
  // With a key header profile the key is the header; otherwise State finds the identity in
  // the body.
  if (cfg_.profile->identity != Identity::header) return false;
  const std::string_view key_header = cfg_.effective_key_header();
  for (std::size_t i = 0; i < req.header_count; ++i) {
    if (iequals(req.headers[i].name, key_header)) {
      *key = req.headers[i].value;
      return !key->empty();
    }
  }
  return false;
}

Worker::Next Worker::answer_operation(Conn* c, const Request& req, std::string_view body, const OpTarget& op,
                                      bool close) {
  const Profile& prof = *cfg_.profile;
  if (!srv_.state.authorized(cfg_, cfg_.api_keys.empty() ? std::string_view{} : req.header("Authorization"))) {
    srv_.state.count_auth_refused();
    set_canned(reply_, prof.unauthorized);
    append_reply(c, reply_, close);
    return Next::more;
  }
  std::string_view key;
  const bool has_key = header_key(req, &key);
  return deliver(c, srv_.state.post_operation(cfg_, op, body, has_key, key, request_scope(req), reply_), nullptr,
                 close);
}

Worker::Next Worker::answer_payment(Conn* c, const Request& req, std::string_view body,
                                    BodyFormat format, bool close) {
  std::string_view key;
  const bool has_key = header_key(req, &key);
  std::string_view auth;
  if (!cfg_.api_keys.empty()) auth = req.header("Authorization");
  std::unique_ptr<Held> held;
  return deliver(c, srv_.state.post_payment(cfg_, auth, has_key, key, body, reply_, &held, format, request_scope(req)),
                 &held, close);
}

Worker::Next Worker::deliver(Conn* c, Disposition d, std::unique_ptr<Held>* held, bool close) {
  switch (d) {
    case Disposition::respond:
      // An `early` notification is on its way: the client has its answer only after it.
      if (cfg_.latency_ms > 0 || reply_.hold_ms > 0) {
        return answer_later(c, close, false, std::max(cfg_.latency_ms, reply_.hold_ms));
      }
      append_reply(c, reply_, close);
      return Next::more;
    case Disposition::reset:
      if (cfg_.latency_ms > 0) return answer_later(c, close, true);
      reset_conn(c);
      return Next::gone;
    case Disposition::refuse: {
      // The listeners go down now; the RST waits until every worker closed its idle
      // connections, so a retry cannot slip through an old keep-alive connection.
      const uint64_t gen = srv_.outage(cfg_.refuse_ms);
      c->held = true;
      deferred_.push_back({gen, key_of(*c), true});
      return Next::stop;
    }
    case Disposition::hold: {
      c->held = true;
      Timer t;
      t.when = now_ns() + static_cast<int64_t>(cfg_.slow_ms + cfg_.latency_ms) * 1000000;
      t.conn_key = key_of(*c);
      t.close = close;
      t.held = std::move(*held);
      add_timer(std::move(t));
      return Next::stop;
    }
  }
  return Next::more;
}

}  // namespace payretry_sim
