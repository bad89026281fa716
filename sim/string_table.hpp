// An insert-only hash table keyed by strings, for the simulator's sharded state.
//
// Why not std::unordered_map: its rehash walks every node (one cache miss each), and with
// uniformly hashed keys all 64 shards grow past their thresholds at about the same moment,
// so a million keys in, the worker stalls for hundreds of milliseconds: long enough to time
// out a client under benchmark. Here the slots hold the full hash next to the node pointer,
// so growing only moves 16-byte slots and never touches a node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace payretry_sim {

inline uint64_t hash_key(std::string_view s) {
  uint64_t h = std::hash<std::string_view>{}(s);
  // A final mix: the table uses the low bits, the shard choice the high ones.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

template <typename V>
class StringTable {
 public:
  struct Node {
    std::string key;
    V value{};
  };

  explicit StringTable(std::size_t initial_capacity = 16) { init(initial_capacity); }

  V* find(std::string_view key, uint64_t h) {
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.node) return nullptr;
      if (s.hash == h && s.node->key == key) return &s.node->value;
    }
  }
  const V* find(std::string_view key, uint64_t h) const {
    return const_cast<StringTable*>(this)->find(key, h);
  }

  // Returns the value for `key`, inserting a default one; second is true when inserted.
  std::pair<V*, bool> emplace(std::string_view key, uint64_t h) {
    std::size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.node) break;
      if (s.hash == h && s.node->key == key) return {&s.node->value, false};
    }
    if ((size_ + 1) * 4 > slots_.size() * 3) {  // keep the load factor under 3/4
      grow();
      for (i = h & mask_; slots_[i].node; i = (i + 1) & mask_) {
      }
    }
    auto node = std::make_unique<Node>();
    node->key.assign(key.data(), key.size());
    V* v = &node->value;
    slots_[i].hash = h;
    slots_[i].node = std::move(node);
    ++size_;
    return {v, true};
  }

  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.node) f(std::string_view(s.node->key), s.node->value);
    }
  }

  std::size_t size() const { return size_; }

  void clear(std::size_t initial_capacity = 16) {
    std::vector<Slot>().swap(slots_);
    init(initial_capacity);
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    std::unique_ptr<Node> node;
  };

  void init(std::size_t capacity) {
    std::size_t n = 16;
    while (n < capacity) n *= 2;
    slots_.resize(n);
    mask_ = n - 1;
    size_ = 0;
  }

  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(old.size() * 2);
    mask_ = slots_.size() - 1;
    for (Slot& s : old) {
      if (!s.node) continue;
      std::size_t i = s.hash & mask_;
      while (slots_[i].node) i = (i + 1) & mask_;
      slots_[i] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace payretry_sim
