// A process-wide cache of selected plans: (descriptor, preference, device) -> the immutable
// resolved execution state a plan shares. Thread-safe; bounded (cleared when full, so a workload
// with endlessly new shapes cannot grow it without limit). Descriptors need == and hash().
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "baracuda/core/plan.hpp"

namespace baracuda::detail {

struct PlanCacheCounters {
  std::atomic<size_t> hits{0}, misses{0};
};

template <class Desc, class Exec>
class PlanCache {
 public:
  explicit PlanCache(PlanCacheCounters* counters, size_t capacity = 4096) : counters_(counters), capacity_(capacity) {}

  std::shared_ptr<const Exec> find(const Desc& d, const PlanPreference& p, int device) {
    if (device < 0) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(Key{d, p, device});
    if (it == map_.end()) {
      counters_->misses++;
      return nullptr;
    }
    counters_->hits++;
    return it->second;
  }
  void insert(const Desc& d, const PlanPreference& p, int device, std::shared_ptr<const Exec> e) {
    if (device < 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.size() >= capacity_) map_.clear();
    map_.insert_or_assign(Key{d, p, device}, std::move(e));
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
  }

 private:
  struct Key {
    Desc desc;
    PlanPreference pref;
    int device;
    bool operator==(const Key& o) const { return device == o.device && pref == o.pref && desc == o.desc; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return hash_fields(k.desc) ^ (hash_fields(k.pref) * 31) ^ (static_cast<size_t>(k.device) << 56);
    }
  };
  PlanCacheCounters* counters_;
  size_t capacity_;
  std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const Exec>, KeyHash> map_;
};

}  // namespace baracuda::detail
