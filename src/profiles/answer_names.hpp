// Whether an answer names the request it answers (Profile::names_request,
// Lookup::names_request). A signature proves who wrote an answer, not which
// request it answers: WeChat Pay signs timestamp, nonce and body, Alipay the
// *_response member, and a proxy can hand one order's genuinely signed
// answer to another order's request. Only the fields in which the answer
// names its order (out_trade_no, mchid, the provider's id) tell them apart.
#pragma once
#include <string>
#include <string_view>

#include <cJSON.h>

#include "profile.hpp"

namespace payretry {

// The values the placeholders of a names_request stand for in one request.
struct RequestNames {
  std::string_view order_id;
  std::string_view merchant_id;
  std::string_view provider_id;
  std::string_view key;
  // The row's amount as decimal text ("" when not known): an operation's,
  // as the guard decided it. A name of "{amount}" is checked only when it
  // is known.
  std::string_view amount;
};

// "" when `answer` (parsed; null: not JSON) names the request as `names`
// asks; else why not, in words. `must_carry`: every path must be present
// (a success, a found lookup: it must say whose it is); otherwise only a
// path that is present must hold the request's value.
std::string answer_names_other(const AnswerNames& names, const cJSON* answer, const RequestNames& request,
                               bool must_carry);

}  // namespace payretry
