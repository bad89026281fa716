// Base64 in the standard alphabet (RFC 4648 section 4), as HTTP Basic
// credentials and the RSA signatures of WeChat Pay and Alipay carry it.
#pragma once
#include <string>
#include <string_view>

namespace payretry {

std::string base64_encode(std::string_view bytes);
// Standard alphabet with padding; false (and `out` empty) for anything else.
bool base64_decode(std::string_view text, std::string& out);

}  // namespace payretry
