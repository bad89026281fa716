#include "random_wire.hpp"

#include "json_build.hpp"

namespace payretry::dst {
namespace {

template <size_t N>
std::string pick(Rng& r, const char* const (&options)[N]) {
  return options[r.range(0, static_cast<int64_t>(N) - 1)];
}

std::string q(const std::string& s) { return json_quote(s); }

AnswerShape shape(int status, const JsonMembers& members) { return AnswerShape{status, json_object(members), {}}; }

// A status_map entry the profile may write for a word: the truth, or less.
const char* claim(Rng& r, const char* truth, int truth_percent, int pending_percent) {
  const int64_t x = r.range(0, 99);
  if (x < truth_percent) return truth;
  if (x < truth_percent + pending_percent) return "PENDING";
  return nullptr;  // unlisted: the payment stays UNKNOWN
}

}  // namespace

RandomProvider draw_random_provider(Rng& r, Rng* auth) {
  RandomProvider out;
  Wire& w = out.wire;
  w.name = "random";
  w.id_prefix = "rnd_";
  JsonMembers profile;  // the profile's top-level members, written at the end
  std::string rules;    // the profile's own classify rules, in order
  auto rule = [&](const std::string& json) { rules += (rules.empty() ? "" : ",") + json; };

  // --- identity, encoding, replay ----------------------------------------------------------
  const int64_t identity = r.range(0, 9);
  std::string identity_json;
  if (identity <= 5) {
    w.identity = Wire::Identity::header;
    w.key_header = pick(r, {"Idempotency-Key", "X-Idempotency-Key", "Request-Key", "idem-token"});
    identity_json = R"({"mode":"header","name":)" + q(w.key_header) + "}";
  } else if (identity <= 7) {
    w.identity = Wire::Identity::body_key;
    w.key_path = pick(r, {"idempotency_key", "request_key", "idem"});
    identity_json = R"({"mode":"body","name":)" + q("$." + w.key_path) + R"(,"max_length":64})";
  } else {
    w.identity = Wire::Identity::reference;
    w.key_path = pick(r, {"merchant_ref", "trade.out_no"});
    identity_json = R"({"mode":"reference","name":)" + q("$." + w.key_path) +
                    R"(,"min_length":1,"max_length":64,"charset":"_"})";
  }
  w.form_bodies = r.chance(25);
  w.order_path = r.chance(50) ? "order_id" : "metadata.order_id";
  if (w.identity == Wire::Identity::reference) {
    w.replay = ReplayKind::reference;
    w.retention_ms = 0;
  } else {
    const ReplayKind kinds[] = {ReplayKind::all_answers, ReplayKind::success_only, ReplayKind::current_state};
    w.replay = kinds[r.range(0, 2)];
    w.retention_ms = r.range(3600, 48 * 3600) * 1000;
  }
  w.hidden_uncached_errors = w.replay == ReplayKind::success_only && r.chance(60);
  w.decline_leaves_record = r.chance(80);
  w.error_carries_id = r.chance(40);
  if (w.replay == ReplayKind::all_answers || w.replay == ReplayKind::success_only)
    w.replay_marker = r.chance(60) ? pick(r, {"Idempotent-Replayed", "X-Replayed"}) : "";

  // The profile: the wire's replay, or less.
  ReplayKind claimed = w.replay;
  if (r.chance(30)) {
    claimed = ReplayKind::none;
    if ((w.replay == ReplayKind::all_answers || w.replay == ReplayKind::current_state) && r.chance(50))
      claimed = ReplayKind::success_only;
  }
  profile.emplace_back("name", q("dst_random"));
  profile.emplace_back("extends", q("generic"));
  profile.emplace_back("notes", R"(["Drawn by the deterministic simulation from a random wire (tests/dst/random_wire.cpp)."])");
  profile.emplace_back("identity", identity_json);
  const std::string create_path = pick(r, {"/v1/charges", "/api/pay", "/payments/create"});
  profile.emplace_back("create_path", q(create_path));
  profile.emplace_back("encoding", q(w.form_bodies ? "form" : "json"));
  // OAuth2 client credentials, or a fixed bearer. A provider whose 401
  // never follows processing may say so (auth.unauthorized_not_processed);
  // one whose gateway may refuse the token after the charge may not.
  std::string auth_json = R"({"scheme":"bearer"})";
  if (auth && auth->chance(35)) {
    w.token_path = "/oauth/token";
    w.unauthorized_after_processing = auth->chance(70);
    auth_json = R"({"scheme":"oauth2_client_credentials","token_path":"/oauth/token")";
    if (!w.unauthorized_after_processing && auth->chance(50)) auth_json += R"(,"unauthorized_not_processed":true)";
    auth_json += "}";
  }
  profile.emplace_back("auth", auth_json);
  if (w.retention_ms == 0) profile.emplace_back("retention_ms", "null");
  else profile.emplace_back("retention_ms", std::to_string(r.chance(70) ? w.retention_ms
                                                                      : r.range(w.retention_ms / 4, w.retention_ms)));
  profile.emplace_back("replay", q(replay_kind_name(claimed)));
  profile.emplace_back("replay_header", q(!w.replay_marker.empty() && r.chance(70) ? w.replay_marker : ""));

  // --- the answers to a create ---------------------------------------------------------------
  const int64_t where = r.range(0, 2);
  const std::string id_at = where == 0 ? "id" : where == 1 ? "payment.id" : "data.payment_id";
  const std::string status_at = where == 1 ? "payment.status" : r.chance(50) ? "status" : "state";
  const std::string success_word = pick(r, {"succeeded", "captured", "AUTHORISED"});
  w.success = shape(r.chance(50) ? 200 : 201, {{id_at, q("{id}")}, {status_at, q(success_word)}});
  std::string response = R"({"id_path":)" + q("$." + id_at) + R"(,"status_path":)" + q("$." + status_at);
  if (r.chance(50)) response += R"(,"success_requires_id":true)";
  if (r.chance(50)) {
    // A refusal inside a 2xx, as Adyen's resultCode and Checkout.com's status:
    // the profile's own rule reads it as a final no-charge answer.
    const std::string word = pick(r, {"declined", "Refused", "DENIED"});
    w.decline = shape(w.success.status, {{id_at, q("{id}")}, {status_at, q(word)}});
    rule(R"({"when":{"status":"2xx","code_path":)" + q("$." + status_at) + R"(,"codes":[)" + q(word) +
         R"(]},"verdict":"fail","processed":false,"reason":"declined"})");
  } else {
    const int codes[] = {402, 400, 422};
    w.decline = shape(codes[r.range(0, 2)], {{"error.code", q("card_declined")}});
  }
  if (w.error_carries_id) {
    w.error = shape(500, {{"error.type", q("api_error")}, {"error.payment.id", q("{id}")}});
    if (r.chance(70)) response += R"(,"error_id_path":"$.error.payment.id")";
  } else {
    w.error = shape(500, {{"error.type", q("api_error")}});
  }
  response += "}";
  profile.emplace_back("response", response);
  if (r.chance(50)) {
    w.in_progress = shape(409, {{"error.code", q("in_progress")}});  // generic: retry_after_backoff
  } else {
    w.in_progress = shape(422, {{"code", q("REQUEST_IN_PROGRESS")}});
    rule(R"({"when":{"status":422,"code_path":"$.code","codes":["REQUEST_IN_PROGRESS"]},"verdict":"retry_after_backoff","reason":"in_progress"})");
  }
  w.mismatch = shape(422, {{"code", q("idempotency_key_reused")}});  // generic: mismatch
  w.unsigned_request = w.mismatch;
  if (w.replay == ReplayKind::reference) {
    // A second request under a reference the provider holds: the earlier
    // payment's success again, or a duplicate the profile queries.
    if (r.chance(50)) {
      w.already_paid = w.success;
    } else {
      w.already_paid = shape(409, {{"code", q("DUPLICATE_REFERENCE")}});
      rule(R"({"when":{"code_path":"$.code","codes":["DUPLICATE_REFERENCE"]},"verdict":"query","reason":"duplicate_reference"})");
    }
  } else {
    w.already_paid = w.mismatch;
  }
  // An error a success-only provider did not store can hide behind a lost
  // answer: a profile must query after every answer that may hide one. Any
  // profile may (claiming less).
  if (w.hidden_uncached_errors || r.chance(20)) {
    rule(R"({"when":{"transport":"not_sent"},"verdict":"retry"})");
    rule(R"({"when":{"transport":"timeout"},"verdict":"query","reason":"timeout_lookup_first"})");
    rule(R"({"when":{"transport":"connection_lost"},"verdict":"query","reason":"connection_lost_lookup_first"})");
  }
  // A provider that replays its errors (or never runs a payment twice) may
  // be sent a 5xx again with the same key.
  if (w.replay != ReplayKind::success_only && r.chance(50))
    rule(R"({"when":{"status":"5xx"},"verdict":"retry_after_backoff","reason":"replayed_error"})");

  // --- the lookup --------------------------------------------------------------------------
  const int64_t lk = r.range(0, 99);
  w.word_charged = pick(r, {"paid", "succeeded", "COMPLETED"});
  w.word_declined = pick(r, {"failed", "declined", "CANCELED"});
  w.word_processing = r.chance(40) ? "processing" : "";
  const bool list_answer = r.chance(50);
  const std::string lk_id = list_answer ? "data[0].id" : pick(r, {"id", "payment_id"});
  const std::string lk_status = list_answer ? "data[0].status" : pick(r, {"status", "state"});
  std::string lookup = "{";
  auto found_shape = [&](const std::string& ref_member) {
    JsonMembers m;
    std::string id_name = lk_id, status_name = lk_status;
    if (list_answer) {
      id_name = "id";
      status_name = "status";
    }
    m.emplace_back(id_name, q("{id}"));
    m.emplace_back(status_name, q("{status}"));
    if (!ref_member.empty()) m.emplace_back(ref_member, q("{ref}"));
    const std::string one = json_object(m);
    return list_answer ? AnswerShape{200, R"({"total":1,"data":[)" + one + "]}", {}} : AnswerShape{200, one, {}};
  };
  auto status_map = [&]() {
    std::string m = "{";
    auto add = [&](const std::string& word, const char* target) {
      if (target) m += (m.size() > 1 ? "," : "") + q(word) + ":" + q(target);
    };
    add(w.word_charged, claim(r, "SUCCEEDED", 80, 10));
    add(w.word_declined, claim(r, "FAILED", 70, 15));
    if (!w.word_processing.empty()) add(w.word_processing, claim(r, "PENDING", 70, 0));
    return m + "}";
  };
  auto read_paths = [&]() {
    return R"("status_path":)" + q("$." + lk_status) + R"(,"id_path":)" + q("$." + lk_id) +
           R"(,"status_map":)" + status_map();
  };
  const bool by_reference = w.identity == Wire::Identity::reference ? lk >= 40 : lk >= 55;
  if (lk < 15) {
    w.lookup = Wire::Lookup::none;
    lookup += R"("by":"none")";
  } else if (lk < 25 && w.identity != Wire::Identity::reference) {
    w.lookup = Wire::Lookup::replay;
    lookup += R"("by":"replay")";
  } else if (!by_reference) {
    w.lookup = Wire::Lookup::by_id;
    w.lookup_path = "/v1/payments/";
    w.found = found_shape("");
    w.not_found = shape(404, {{"code", q("NOT_FOUND")}});
    lookup += R"("by":"provider_id","method":"GET","path":"/v1/payments/{provider_id}",)" + read_paths();
  } else {
    w.lookup = Wire::Lookup::by_reference;
    // What the lookup searches by: the reference identity itself; a
    // reference the profile names (reference_path: the client writes it or
    // checks it); or one the caller fills or not, and with what it likes,
    // which the profile does not name. Then "not found" proves nothing.
    const int64_t carried = w.identity == Wire::Identity::reference ? 0 : r.range(1, 2);
    std::string reference_path;
    if (carried == 0) {
      w.search_path = w.key_path;
      w.caller_reference = Wire::CallerReference::always;
    } else if (carried == 1) {
      w.search_path = pick(r, {"merchant_ref", "reference"});
      w.caller_reference = Wire::CallerReference::half;
      reference_path = "$." + w.search_path;
    } else {
      w.search_path = pick(r, {"merchant_ref", "cart.reference"});
      w.caller_reference = Wire::CallerReference::unreliable;
    }
    const int64_t route = r.range(0, 2);
    if (route == 0) {
      w.lookup_path = "/v1/payments?merchant_ref=";
      lookup += R"("by":"order_id","method":"GET","path":"/v1/payments?merchant_ref={order_id}",)";
    } else if (route == 1) {
      w.lookup_path = "/v1/orders/";
      lookup += R"("by":"order_id","method":"GET","path":"/v1/orders/{order_id}",)";
    } else {
      w.lookup_method = "POST";
      w.lookup_path = "/v1/search";
      w.lookup_body_path = "query.ref";
      lookup += R"("by":"order_id","method":"POST","path":"/v1/search","body":"{\"query\":{\"ref\":\"{order_id}\"}}",)";
    }
    w.found = found_shape(r.chance(50) ? "reference" : "");
    lookup += read_paths();
    if (list_answer) {
      w.not_found = AnswerShape{200, R"({"total":0,"data":[]})", {}};
      lookup += R"(,"not_found":{"status":200,"code_path":"$.total","codes":["0"]})";
    } else {
      w.not_found = shape(404, {{"code", q("NOT_FOUND")}});
      lookup += R"(,"not_found":{"status":404,"code_path":"$.code","codes":["NOT_FOUND"]})";
    }
    if (!reference_path.empty()) lookup += R"(,"reference_path":)" + q(reference_path);
  }
  lookup += "}";
  if (!rules.empty()) profile.emplace_back("classify", "[" + rules + "]");
  profile.emplace_back("lookup", lookup);
  out.profile_json = json_object(profile);

  static const char* const identities[] = {"header", "body key", "reference"};
  static const char* const lookups[] = {"none", "replay", "by reference", "by id"};
  static const char* const callers[] = {"", " (always carried)", " (carried: reference_path)",
                                        " (not carried: no reference_path)"};
  out.summary = std::string("random wire: identity ") + identities[static_cast<int>(w.identity)] + ", replay " +
                replay_kind_name(w.replay) + (w.hidden_uncached_errors ? " (hides unstored errors)" : "") +
                ", profile claims " + replay_kind_name(claimed) + ", " + (w.form_bodies ? "form" : "json") +
                (w.token_path.empty() ? "" : w.unauthorized_after_processing ? ", OAuth2 (401 after processing)" : ", OAuth2") +
                ", lookup " + lookups[static_cast<int>(w.lookup)] +
                (w.lookup == Wire::Lookup::by_reference ? callers[static_cast<int>(w.caller_reference)] : "");
  return out;
}

}  // namespace payretry::dst
