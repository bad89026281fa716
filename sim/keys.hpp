// The key directory given with --keys, laid out like tests/keys/: the public halves the
// simulator verifies requests with and the private halves it signs its answers with.
#pragma once

#include <memory>
#include <string>

#include "crypto.hpp"

namespace payretry_sim {

struct KeySet {
  RsaKey wechat_merchant_pub;  // wechat_merchant_pub.pem: verifies WeChat Pay v3 requests
  RsaKey wechat_platform_key;  // wechat_platform_key.pem: signs WeChat Pay v3 answers
  RsaKey alipay_app_pub;       // alipay_app_pub.pem: verifies Alipay gateway requests
  RsaKey alipay_key;           // alipay_key.pem: signs Alipay gateway answers

  // Loads all four files. Throws std::invalid_argument naming the first missing or bad one.
  static std::shared_ptr<const KeySet> load(const std::string& dir);
};

}  // namespace payretry_sim
