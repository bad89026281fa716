#include "auth.hpp"

namespace payretry {

std::string authorize_or_why(Authenticator& auth, OutgoingRequest& r, int64_t unix_ms, int64_t budget_ms) {
  try {
    return auth.authorize(r, unix_ms, budget_ms);
  } catch (const std::exception& e) {
    return std::string("the request could not be signed: ") + e.what();
  }
}

std::unique_ptr<Authenticator> make_authenticator(const Config& config, const Profile& profile, Transport& transport,
                                                  Clock& clock, BackgroundRunner* runner) {
  const AuthScheme scheme = profile.auth.scheme;
  const char* provider = profile.name.c_str();
  switch (config.auth.kind) {
    case AuthConfig::Kind::none:
    case AuthConfig::Kind::fixed_headers:
    case AuthConfig::Kind::api_key:
      return nullptr;
    case AuthConfig::Kind::oauth2:
      if (config.auth.token_path.empty() && profile.auth.token_path.empty())
        throw ConfigError(std::string("auth.oauth2.token_path: is required: provider ") + provider +
                          " names no token endpoint");
      return make_oauth2_authenticator(config, profile, transport, clock, runner);
    case AuthConfig::Kind::wechatpay:
      if (scheme != AuthScheme::wechatpay_v3)
        throw ConfigError(std::string("auth.wechatpay: provider ") + provider + " does not sign like WeChat Pay v3");
      if (config.merchant_id.empty())
        throw ConfigError("merchant_id: is required by auth.wechatpay (the mchid every request is signed for)");
      return make_wechatpay_authenticator(config);
    case AuthConfig::Kind::alipay:
      if (scheme != AuthScheme::alipay_rsa2)
        throw ConfigError(std::string("auth.alipay: provider ") + provider + " does not sign like Alipay's gateway");
      if (profile.encoding != Encoding::form_flat)
        throw ConfigError(std::string("auth.alipay: provider ") + provider +
                          " must send the gateway's form (encoding form_flat) for its parameters to be signed");
      return make_alipay_authenticator(config);
  }
  return nullptr;
}

}  // namespace payretry
