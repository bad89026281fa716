#include "profile.hpp"

namespace payretry {
namespace {

Profile make_generic() {
  Profile p;
  p.name = "generic";
  p.key_header = "Idempotency-Key";
  p.create_path = "";
  // An unknown provider has not promised that a 500 came before processing:
  // stop and settle by query rather than guess (seed: only the 5xx the
  // provider's contract allows are retried).
  p.retry_other_5xx = false;
  p.replay_header = "Idempotent-Replayed";
  p.request_id_headers = {"Request-Id", "X-Request-Id"};
  return p;
}

Profile make_stripe() {
  Profile p;
  p.name = "stripe";
  p.key_header = "Idempotency-Key";
  p.key_max_length = 255;
  p.create_path = "/v1/payment_intents";
  // Stripe: a 500 replays with the same key; retrying it is safe and the
  // Stripe-Should-Retry header, when present, overrides the status.
  p.retry_other_5xx = true;
  p.should_retry_header = "Stripe-Should-Retry";
  p.replay_header = "Idempotent-Replayed";
  p.request_id_headers = {"Request-Id"};
  return p;
}

}  // namespace

const Profile* builtin_profile(std::string_view name) {
  static const Profile generic = make_generic(), stripe = make_stripe();
  if (name == "generic") return &generic;
  if (name == "stripe") return &stripe;
  return nullptr;
}

std::string builtin_profile_names() { return "generic, stripe"; }

}  // namespace payretry
