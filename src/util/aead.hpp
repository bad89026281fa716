// AES-256-GCM decryption, as WeChat Pay v3 encrypts a notification's
// `resource` (AEAD_AES_256_GCM: the 32-byte APIv3 key, the resource's nonce
// and associated_data, the 16-byte tag after the ciphertext).
#pragma once
#include <string>
#include <string_view>

namespace payretry {

// The plaintext of `ciphertext_and_tag` (the tag its last 16 bytes) under
// `key` (32 bytes), `nonce` and `associated_data`. False (and `plaintext`
// empty) when the key is not 32 bytes, the nonce is empty, the input is
// shorter than a tag, or the tag does not authenticate: nothing of an
// unauthenticated plaintext is ever handed out.
bool aes_256_gcm_decrypt(std::string_view key, std::string_view nonce, std::string_view associated_data,
                         std::string_view ciphertext_and_tag, std::string& plaintext);

}  // namespace payretry
