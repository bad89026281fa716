#include "keys.hpp"

namespace payretry_sim {

std::shared_ptr<const KeySet> KeySet::load(const std::string& dir) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  return std::make_shared<const KeySet>(KeySet{
      RsaKey::public_pem_file(base + "wechat_merchant_pub.pem"),
      RsaKey::private_pem_file(base + "wechat_platform_key.pem"),
      RsaKey::public_pem_file(base + "alipay_app_pub.pem"),
      RsaKey::private_pem_file(base + "alipay_key.pem"),
  });
}

}  // namespace payretry_sim
