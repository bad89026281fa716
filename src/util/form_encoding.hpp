// Request bodies as application/x-www-form-urlencoded, for providers whose
// API takes form fields rather than JSON (Stripe's v1 API takes only form
// bodies). The caller hands payretry a JSON document; it is encoded once, the
// same way every time, so every attempt and every later process sends the
// same bytes for the same document.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct cJSON;

namespace payretry {

// Stripe's nesting, as its SDKs write it: an object member is key[member],
// an array element key[index] (from 0), a string its text, a number its
// shortest exact text, true/false their names, null an empty value (Stripe:
// "unset"). Members keep the document's order. Names and values are
// percent-encoded (RFC 3986 unreserved characters pass, a space is '+', as
// urllib's urlencode does). An empty object or array writes nothing.
// The document must be a JSON object.
std::string form_encode_json(const cJSON* object);

// Alipay's gateway form from a JSON object's text: one field per top-level
// member; an object or array member travels as its own text without the
// whitespace between tokens (biz_content={"out_trade_no":..}, numbers
// exactly as written), other values as form_encode_json writes them. ""
// for text that is not a JSON object.
std::string form_encode_flat(std::string_view json);

// One name or value percent-encoded as form_encode_json does it.
std::string form_escape(std::string_view s);

// The fields of a form body (or a URL query), decoded, in order. False for
// a malformed escape or a field without a name.
bool form_decode(std::string_view body, std::vector<std::pair<std::string, std::string>>& fields);

// Whether `body` reads as form fields a caller wrote by hand: name=value
// pairs joined by '&', every byte visible ASCII other than the
// characters a form body must escape. JSON text ("{...}", "[...]", a
// string) is not.
bool looks_form_encoded(std::string_view body);

}  // namespace payretry
