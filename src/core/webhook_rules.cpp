#include "webhook_rules.hpp"

#include "hmac.hpp"
#include "validate.hpp"

namespace payretry {
namespace {

const char* verdict_of(StatusTarget t) {
  switch (t) {
    case StatusTarget::succeeded: return kEventSucceeded;
    case StatusTarget::failed: return kEventFailed;
    case StatusTarget::pending: break;
  }
  return kEventNoted;
}

}  // namespace

const char* event_finding(const Profile& profile, const std::string& event_type, const std::string& status) {
  if (!event_type.empty())
    if (const auto t = profile.webhook.events.find(event_type); t != profile.webhook.events.end())
      return verdict_of(t->second);
  if (!status.empty())
    if (const auto s = profile.lookup.status_map.find(status); s != profile.lookup.status_map.end())
      return verdict_of(s->second);
  return kEventNoted;
}

const char* event_finding_on(const char* finding, const PaymentRow* row, const std::string& event_provider_id,
                             const std::string& event_key) {
  if (std::string_view(finding) != kEventFailed) return finding;
  if (!row) return kEventNoted;
  const bool same_id = !row->provider_payment_id.empty() && row->provider_payment_id == event_provider_id;
  const bool same_key = !row->idempotency_key.empty() && row->idempotency_key == event_key;
  return same_id || same_key ? kEventFailed : kEventNoted;
}

const char* event_finding_by_money(const char* finding, MoneyState money, const PaymentRow* row,
                                   const std::string& event_provider_id) {
  if (std::string_view(finding) != kEventSucceeded) return finding;
  if (money != MoneyState::awaiting_customer && money != MoneyState::pending && money != MoneyState::failed)
    return finding;
  const bool same_id = row && !row->provider_payment_id.empty() && row->provider_payment_id == event_provider_id;
  return same_id ? finding : kEventNoted;
}

std::string key_as_proof(const PaymentRow& row, const std::string& event_key, int64_t object_created_s,
                         const std::optional<int64_t>& retention_ms) {
  constexpr int64_t kClockMarginMs = 3600 * 1000;
  if (event_key.empty()) return {};
  if (!retention_ms) return event_key;
  if (object_created_s <= 0) return {};
  const int64_t made_ms = object_created_s * 1000;
  return made_ms >= row.created_at - (*retention_ms - kClockMarginMs) ? event_key : std::string();
}

EventWithoutRow event_without_row(const std::string& event_provider_id) {
  return event_provider_id.empty() ? EventWithoutRow::ignored : EventWithoutRow::kept_by_id;
}

bool event_in_payment_account(const Profile& profile, const std::string& payment_account,
                              const std::string& event_account) {
  return profile.webhook.account_header.empty() || payment_account == event_account;
}

const char* recorded_event_effect(const PaymentRow* before, const PaymentRow* after, const std::string& finding,
                                  const std::string& settled_detail) {
  const auto final_state = [](const PaymentRow* r) {
    return r && (r->state == PaymentState::succeeded || r->state == PaymentState::failed);
  };
  const auto disagrees = [&](const PaymentRow* r) {
    return final_state(r) && finding != "noted" && finding != (r->state == PaymentState::succeeded ? "succeeded" : "failed");
  };
  if (disagrees(before) || disagrees(after)) return "conflict";
  if (before && after && !final_state(before) && after->state != before->state && after->detail == settled_detail)
    return "settled";
  return "recorded";
}

std::string operation_event_kind(const Profile& profile, const std::string& event_type) {
  if (event_type.empty()) return {};
  for (const auto& [name, op] : profile.operations)
    if (op.webhook.events.count(event_type)) return name;
  return {};
}

const char* operation_event_finding(const ProfileOperation& op, const std::string& event_type,
                                    const std::string& status) {
  const auto t = op.webhook.events.find(event_type);
  if (t == op.webhook.events.end()) return kEventNoted;
  if (t->second != StatusTarget::pending || status.empty()) return verdict_of(t->second);
  if (const auto s = op.status_map.find(status); s != op.status_map.end()) return verdict_of(s->second);
  if (const auto s = op.lookup.status_map.find(status); s != op.lookup.status_map.end()) return verdict_of(s->second);
  return kEventNoted;
}

int operation_event_row(const std::vector<PaymentRow>& rows, OperationKind kind, const std::string& operation_id,
                        const std::string& event_key) {
  int by_id = -1, by_key = -1, ids = 0, keys = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const PaymentRow& r = rows[i];
    if (r.operation != kind) continue;
    if (!operation_id.empty() && r.provider_payment_id == operation_id) {
      by_id = static_cast<int>(i);
      ++ids;
    }
    if (!event_key.empty() && r.idempotency_key == event_key &&
        (r.provider_payment_id.empty() || r.provider_payment_id == operation_id)) {
      by_key = static_cast<int>(i);
      ++keys;
    }
  }
  if (ids > 1) return -1;
  if (ids == 1) return by_id;
  return keys == 1 ? by_key : -1;
}

std::string stored_event_id(const std::string& id) {
  if (check_order_id(id).empty()) return id;
  return "sha256:" + hex_encode(hmac_sha256("payretry webhook event id", id));
}

std::string lookup_event_id(const std::string& provider_id, const std::string& status) {
  return stored_event_id("lookup:" + provider_id + ":" + status);
}

bool kept_event_applies(const PaymentRow& row, const LedgerEvent& event) {
  return event.received_at > row.created_at;
}

}  // namespace payretry
