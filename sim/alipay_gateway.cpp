#include "alipay_gateway.hpp"

#include "operations.hpp"

#include <ctime>
#include <map>

#include "form_body.hpp"
#include "http_conn.hpp"

namespace payretry_sim {

namespace {

using Params = std::map<std::string, std::string>;  // sorted by name, as the sign content wants

const char kPay[] = "alipay.trade.pay";
const char kQuery[] = "alipay.trade.query";

// "a=1&b=2" into params; a name already there keeps its first value. False on a bad escape.
bool read_pairs(std::string_view s, Params* params) {
  std::string name, value;
  while (!s.empty()) {
    const std::size_t amp = s.find('&');
    const std::string_view pair = s.substr(0, amp);
    s = amp == std::string_view::npos ? std::string_view{} : s.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    if (!form_decode(pair.substr(0, eq), &name) ||
        !form_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), &value)) {
      return false;
    }
    params->emplace(name, value);
  }
  return true;
}

bool is_form(std::string_view content_type) {
  constexpr std::string_view kForm = "application/x-www-form-urlencoded";
  return content_type.size() >= kForm.size() && iequals(content_type.substr(0, kForm.size()), kForm);
}

std::string error_body(std::string_view member, std::string_view code, std::string_view msg,
                       std::string_view sub_code, std::string_view sub_msg) {
  std::string out = "{";
  append_json_string(out, member);
  out.append(R"(:{"code":)");
  append_json_string(out, code);
  out.append(R"(,"msg":)");
  append_json_string(out, msg);
  out.append(R"(,"sub_code":)");
  append_json_string(out, sub_code);
  out.append(R"(,"sub_msg":)");
  append_json_string(out, sub_msg);
  out.append("}}");
  return out;
}

std::string missing(std::string_view member, std::string_view sub_code, std::string_view sub_msg) {
  return error_body(member, "40001", "Missing Required Arguments", sub_code, sub_msg);
}
std::string invalid(std::string_view member, std::string_view sub_code, std::string_view sub_msg) {
  return error_body(member, "40002", "Invalid Arguments", sub_code, sub_msg);
}

// "alipay.trade.pay" -> "alipay_trade_pay_response"
std::string response_member(std::string_view method) {
  std::string m(method);
  for (char& c : m) {
    if (c == '.') c = '_';
  }
  return m + "_response";
}

// "yyyy-MM-dd HH:mm:ss" in Beijing time (UTC+8) -> Unix seconds.
bool parse_timestamp(std::string_view s, int64_t* unix_s) {
  if (s.size() != 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':') {
    return false;
  }
  auto num = [&](std::size_t at, std::size_t len, int* v) {
    *v = 0;
    for (std::size_t i = at; i < at + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      *v = *v * 10 + (s[i] - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, se;
  if (!num(0, 4, &y) || !num(5, 2, &mo) || !num(8, 2, &d) || !num(11, 2, &h) || !num(14, 2, &mi) ||
      !num(17, 2, &se)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  *unix_s = static_cast<int64_t>(timegm(&tm)) - 8 * 3600;
  return true;
}

// Every parameter but sign, non-empty values, in name order: "k=v&k=v".
std::string sign_content(const Params& params) {
  std::string out;
  for (const auto& [name, value] : params) {
    if (name == "sign" || value.empty()) continue;
    if (!out.empty()) out.push_back('&');
    out.append(name).append("=").append(value);
  }
  return out;
}

struct Required {
  const char* name;
  const char* sub_code;
  const char* sub_msg;
};

// The gateway's own order: the method decides the answer's member, so it is read first.
constexpr Required kRequired[] = {
    {"app_id", "isv.missing-app-id", "缺少appId参数"},
    {"sign", "isv.missing-signature", "缺少签名参数"},
    {"sign_type", "isv.missing-signature-type", "缺少签名类型"},
    {"timestamp", "isv.missing-timestamp", "缺少时间戳参数"},
    {"version", "isv.missing-version", "缺少版本参数"},
    // Sim choices: the gateway defaults these two; the design requires them.
    {"format", "isv.missing-format", "缺少format参数"},
    {"charset", "isv.missing-charset", "缺少charset参数"},
    {"biz_content", "isv.missing-biz-content", "缺少biz_content参数"},
};

}  // namespace

bool admit_gateway(std::string_view query, std::string_view content_type, std::string_view body,
                   const RsaKey* app_public, int64_t now_s, GatewayCall* out, std::string* refusal) {
  Params params;
  if (!read_pairs(query, &params) || (is_form(content_type) && !read_pairs(body, &params))) {
    *refusal = invalid("error_response", "isv.invalid-encoding", "参数编码错误");
    return false;
  }
  auto value = [&](const char* name) -> const std::string& {
    static const std::string kEmpty;
    auto it = params.find(name);
    return it == params.end() ? kEmpty : it->second;
  };

  const std::string& method = value("method");
  if (method.empty()) {
    *refusal = missing("error_response", "isv.missing-method", "缺少方法名参数");
    return false;
  }
  if (method != kPay && method != kQuery && !is_gateway_operation(method)) {
    *refusal = invalid("error_response", "isv.invalid-method", "不存在的方法名");
    return false;
  }
  const std::string member = response_member(method);
  for (const Required& r : kRequired) {
    if (value(r.name).empty()) {
      *refusal = missing(member, r.sub_code, r.sub_msg);
      return false;
    }
  }
  if (value("sign_type") != "RSA2") {
    *refusal = invalid(member, "isv.invalid-signature-type", "无效签名类型");
    return false;
  }
  if (!iequals(value("format"), "JSON")) {
    *refusal = invalid(member, "isv.invalid-format", "无效的数据格式");
    return false;
  }
  if (!iequals(value("charset"), "utf-8")) {
    *refusal = invalid(member, "isv.invalid-charset", "字符集错误");
    return false;
  }
  int64_t sent_at = 0;
  if (!parse_timestamp(value("timestamp"), &sent_at) ||
      (app_public && (sent_at < now_s - kAlipayMaxSkewS || sent_at > now_s + kAlipayMaxSkewS))) {
    *refusal = invalid(member, "isv.invalid-timestamp", "非法的时间戳参数");
    return false;
  }
  if (app_public && !app_public->verify(sign_content(params), value("sign"))) {
    *refusal = invalid(member, "isv.invalid-signature", "验签出错");
    return false;
  }
  out->method = method;
  out->biz_content = value("biz_content");
  return true;
}

void sign_gateway_answer(std::string& body, const RsaKey& alipay_key) {
  // The simulator writes every gateway answer as {"<member>":<value>}: the value runs from
  // after the member name's colon to the final brace.
  if (body.size() < 6 || body.compare(0, 2, "{\"") != 0 || body.back() != '}') return;
  constexpr std::string_view kSuffix = "_response";
  const std::size_t name_end = body.find("\":", 2);
  if (name_end == std::string::npos || name_end < 2 + kSuffix.size() ||
      body.compare(name_end - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return;
  }
  const std::size_t value_begin = name_end + 2;
  const std::string_view member_value(body.data() + value_begin, body.size() - 1 - value_begin);
  const std::string sign = alipay_key.sign(member_value);
  body.pop_back();
  body.append(R"(,"sign":)");
  append_json_string(body, sign);
  body.push_back('}');
}

}  // namespace payretry_sim
