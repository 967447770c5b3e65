// FNV-1a over 64-bit words: the one hash every descriptor's hash() is built from.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "baracuda/core/scalar.hpp"

namespace baracuda {

struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ull;
  template <class T>
  void mix(T v) {
    h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
  }
  void mix_all(const int64_t* v, int n) {
    for (int i = 0; i < n; ++i) mix(v[i]);
  }
  void mix_scalar(const Scalar& s) {
    mix(s.kind);
    mix(s.is_int() ? static_cast<uint64_t>(s.i) : std::bit_cast<uint64_t>(s.f));
  }
  size_t value() const { return static_cast<size_t>(h); }
};

}  // namespace baracuda
