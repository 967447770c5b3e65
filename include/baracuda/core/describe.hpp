// baracuda/core/describe.hpp — types that describe themselves once.
//
// An enum lists its enumerators with their printable names once:
//
//   BARACUDA_ENUM(PadMode, uint8_t, (kConstant, "constant"), (kReflect, "reflect"))
//
// declares `enum class PadMode : uint8_t { kConstant, kReflect }` and its EnumTraits, from which
// enum_name(), enum_valid() (the range check every entry point runs), enum_parse() and
// enum_names() ("constant, reflect", for messages) come.
//
// A struct (descriptor, parameter block, Args) lists its fields once, after its definition:
//
//   BARACUDA_DESCRIBE(RopeDescriptor, dtype, layout, pairing, batch, seq, heads_q, ...)
//
// and gets for_each_field(), hash_fields(), to_string() ("dtype=bf16 seq=32768 heads_q=32":
// the fields that differ from a default-constructed value) and from_string() (the inverse, onto
// a default-constructed value; unknown fields and malformed values are errors naming the field).
// A variable-length list of integers (cat's sizes) is an IntList ("3,5,7"; empty when omitted),
// one of dtypes a DTypeVec ("f32,bf16").
// Both macros are used inside namespace baracuda. A field may be a bool, an integer, a double,
// a DType or described enum, a Scalar, a TensorLayout ("bf16[4,5]", strides "{5,1}" appended
// when not contiguous), std::optional of those ("none"), a fixed array of those (comma list,
// trailing default elements omitted), a nested described struct ("scale.factor=8"), or any type
// with describe_put / describe_get / describe_hash overloads found by ADL. Args fields are views
// (TensorRef / TensorMut, arrays of them, std::span<const TensorRef>): the operands a plan binds
// (core/operands.hpp).
//
// A type may add `void describe_complete(T&, uint64_t given)` (ADL): from_string calls it with a
// bit per top-level field that the text named, to fill defaults that depend on other fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/pp.hpp"
#include "baracuda/core/scalar.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// ---------------------------------------------------------------- enums

template <class E>
struct EnumEntry {
  E value;
  std::string_view name;
};

template <class E>
struct EnumTraits;  // specialized by BARACUDA_ENUM (kTypeName, kEntries[])

template <class E>
concept DescribedEnum = std::is_enum_v<E> && requires { EnumTraits<E>::kEntries; };

template <DescribedEnum E>
constexpr const EnumEntry<E>* enum_entry(E v) {
  const auto& es = EnumTraits<E>::kEntries;
  const auto u = static_cast<std::underlying_type_t<E>>(v);
  bool in_range = static_cast<std::make_unsigned_t<std::underlying_type_t<E>>>(u) < std::size(es);
  if constexpr (std::is_signed_v<std::underlying_type_t<E>>) in_range = in_range && u >= 0;
  if (in_range && es[static_cast<size_t>(u)].value == v) return &es[static_cast<size_t>(u)];
  for (const auto& e : es)
    if (e.value == v) return &e;
  return nullptr;
}

// Whether v is one of E's enumerators (a value cast from an arbitrary integer may not be).
template <DescribedEnum E>
constexpr bool enum_valid(E v) {
  return enum_entry(v) != nullptr;
}
// The enumerator's printable name, "?" for a value that is not an enumerator.
template <DescribedEnum E>
constexpr std::string_view enum_name(E v) {
  const EnumEntry<E>* e = enum_entry(v);
  return e ? e->name : std::string_view("?");
}
template <DescribedEnum E>
constexpr bool enum_parse(std::string_view s, E* out) {
  for (const auto& e : EnumTraits<E>::kEntries)
    if (e.name == s) return *out = e.value, true;
  return false;
}
template <DescribedEnum E>
constexpr std::string_view enum_type_name() {
  return EnumTraits<E>::kTypeName;
}
// "constant, reflect, replicate, circular"
template <DescribedEnum E>
std::string enum_names() {
  std::string s;
  for (const auto& e : EnumTraits<E>::kEntries) {
    if (!s.empty()) s += ", ";
    s += e.name;
  }
  return s;
}

#define BARACUDA_ENUM_ITEM_(c, p) BARACUDA_PP_FIRST p
#define BARACUDA_ENUM_ENTRY_(N, p) ::baracuda::EnumEntry<N>{N::BARACUDA_PP_FIRST p, BARACUDA_PP_SECOND p}
#define BARACUDA_ENUM(Name, Underlying, ...)                                                          \
  enum class Name : Underlying { BARACUDA_PP_FOR_EACH(BARACUDA_ENUM_ITEM_, ~, __VA_ARGS__) };         \
  template <>                                                                                         \
  struct EnumTraits<Name> {                                                                           \
    static constexpr std::string_view kTypeName = #Name;                                              \
    static constexpr EnumEntry<Name> kEntries[] = {BARACUDA_PP_FOR_EACH(BARACUDA_ENUM_ENTRY_, Name, __VA_ARGS__)}; \
  }

// DType is described by its own list (dtype.hpp).
template <>
struct EnumTraits<DType> {
  static constexpr std::string_view kTypeName = "DType";
  static constexpr EnumEntry<DType> kEntries[] = {
#define BARACUDA_X(e, name, size, kind) {DType::e, name},
      BARACUDA_DTYPES(BARACUDA_X)
#undef BARACUDA_X
  };
};

// ---------------------------------------------------------------- structs

template <class S, class M>
struct Field {
  using Member = M S::*;  // an alias: nvcc's host pass parenthesizes the declarator otherwise (-Wparentheses)
  std::string_view name;
  Member member;
};

template <class T>
struct Describe;  // specialized by BARACUDA_DESCRIBE (kName, kFields)

template <class T>
concept Described = requires { Describe<std::remove_const_t<T>>::kFields; };

#define BARACUDA_FIELD_(T, f) ::baracuda::Field<T, decltype(T::f)>{#f, &T::f}
#define BARACUDA_DESCRIBE(T, ...)                                                                  \
  template <>                                                                                      \
  struct Describe<T> {                                                                             \
    static constexpr std::string_view kName = #T;                                                  \
    static constexpr auto kFields = std::make_tuple(BARACUDA_PP_FOR_EACH(BARACUDA_FIELD_, T, __VA_ARGS__)); \
  }

template <Described T>
constexpr size_t field_count() {
  return std::tuple_size_v<decltype(Describe<std::remove_const_t<T>>::kFields)>;
}

// f(name, member) for every field, in declaration order of the DESCRIBE line.
template <Described T, class F>
constexpr void for_each_field(T& obj, F&& f) {
  std::apply([&](const auto&... fl) { (f(fl.name, obj.*(fl.member)), ...); }, Describe<std::remove_const_t<T>>::kFields);
}

// Index of the field called `name` in the DESCRIBE line, -1 when there is none.
template <Described T>
constexpr int field_index(std::string_view name) {
  int i = 0, at = -1;
  std::apply([&](const auto&... fl) { ((fl.name == name ? at = i : 0, ++i), ...); },
             Describe<std::remove_const_t<T>>::kFields);
  return at;
}

// ---------------------------------------------------------------- leaf codecs
// describe_put appends a value's text; describe_get parses it and returns "" or what was
// expected ("an integer"); describe_hash mixes it into a hash.

struct HashMix {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over 64-bit words
  void word(uint64_t v) { h = (h ^ v) * 0x100000001b3ull; }
};

void describe_put(std::string& out, bool v);
void describe_put(std::string& out, int64_t v);
void describe_put(std::string& out, uint64_t v);
void describe_put(std::string& out, double v);
void describe_put(std::string& out, const Scalar& v);
void describe_put(std::string& out, const TensorLayout& v);
std::string describe_get(std::string_view s, bool* v);
std::string describe_get(std::string_view s, int64_t* v);
std::string describe_get(std::string_view s, uint64_t* v);
std::string describe_get(std::string_view s, double* v);
std::string describe_get(std::string_view s, Scalar* v);
std::string describe_get(std::string_view s, TensorLayout* v);
void describe_hash(HashMix& h, double v);
void describe_hash(HashMix& h, const Scalar& v);
void describe_hash(HashMix& h, const TensorLayout& v);

// A descriptor field holding any number of integers (the one variable-length field type: a
// list of per-operand extents, e.g. cat's sizes). Text: a comma list ("3,5,7"), "" when empty.
struct IntList {
  std::vector<int64_t> v;
  IntList() = default;
  IntList(std::initializer_list<int64_t> l) : v(l) {}
  explicit IntList(std::vector<int64_t> l) : v(std::move(l)) {}
  size_t size() const { return v.size(); }
  bool empty() const { return v.empty(); }
  int64_t operator[](size_t i) const { return v[i]; }
  bool operator==(const IntList&) const = default;
};
void describe_put(std::string& out, const IntList& v);
std::string describe_get(std::string_view s, IntList* v);
void describe_hash(HashMix& h, const IntList& v);

// A descriptor field holding any number of dtypes (cat's per-input dtypes). Text: a comma list
// of dtype names ("f32,bf16"), "" when empty.
struct DTypeVec {
  std::vector<DType> v;
  DTypeVec() = default;
  DTypeVec(std::initializer_list<DType> l) : v(l) {}
  explicit DTypeVec(std::vector<DType> l) : v(std::move(l)) {}
  size_t size() const { return v.size(); }
  bool empty() const { return v.empty(); }
  DType operator[](size_t i) const { return v[i]; }
  bool operator==(const DTypeVec&) const = default;
};
void describe_put(std::string& out, const DTypeVec& v);
std::string describe_get(std::string_view s, DTypeVec* v);
void describe_hash(HashMix& h, const DTypeVec& v);

// Integers of every width go through int64_t / uint64_t.
template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<I, int64_t> && !std::is_same_v<I, uint64_t>)
void describe_put(std::string& out, I v) {
  if constexpr (std::is_signed_v<I>) describe_put(out, static_cast<int64_t>(v));
  else describe_put(out, static_cast<uint64_t>(v));
}
template <class I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<I, int64_t> && !std::is_same_v<I, uint64_t>)
std::string describe_get(std::string_view s, I* v) {
  using W = std::conditional_t<std::is_signed_v<I>, int64_t, uint64_t>;
  W w = 0;
  std::string why = describe_get(s, &w);
  if (!why.empty()) return why;
  if (static_cast<W>(static_cast<I>(w)) != w) return std::is_signed_v<I> ? "an integer in range" : "an unsigned integer in range";
  *v = static_cast<I>(w);
  return {};
}
template <class I>
  requires(std::is_integral_v<I>)
void describe_hash(HashMix& h, I v) {
  h.word(static_cast<uint64_t>(v));
}

template <DescribedEnum E>
void describe_put(std::string& out, E v) {
  out += enum_name(v);
}
template <DescribedEnum E>
std::string describe_get(std::string_view s, E* v) {
  if (enum_parse(s, v)) return {};
  return "one of " + enum_names<E>();
}
template <DescribedEnum E>
void describe_hash(HashMix& h, E v) {
  h.word(static_cast<uint64_t>(v));
}

template <class T>
void describe_put(std::string& out, const std::optional<T>& v) {
  if (v) describe_put(out, *v);
  else out += "none";
}
template <class T>
std::string describe_get(std::string_view s, std::optional<T>* v) {
  if (s == "none") return v->reset(), std::string();
  T t{};
  std::string why = describe_get(s, &t);
  if (why.empty()) *v = t;
  else why += " or none";
  return why;
}
template <class T>
void describe_hash(HashMix& h, const std::optional<T>& v) {
  h.word(v.has_value());
  if (v) describe_hash(h, *v);
}

namespace describe_detail {
// Splits s at commas outside brackets ("bf16[2,3],f32[4]" -> two items); returns the count
// (at most cap, -1 when there are more).
int split_list(std::string_view s, std::string_view* items, int cap);
}  // namespace describe_detail

// Fixed arrays: a comma list, trailing default elements omitted (parsing defaults the rest).
template <class T, size_t N>
void describe_put(std::string& out, const T (&v)[N]) {
  size_t n = N;
  while (n > 0 && v[n - 1] == T{}) --n;
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    describe_put(out, v[i]);
  }
}
template <class T, size_t N>
std::string describe_get(std::string_view s, T (*v)[N]) {
  std::string_view items[N];
  const int n = s.empty() ? 0 : describe_detail::split_list(s, items, static_cast<int>(N));
  if (n < 0) return "a list of at most " + std::to_string(N) + " items";
  T parsed[N] = {};
  for (int i = 0; i < n; ++i) {
    std::string why = describe_get(items[i], &parsed[i]);
    if (!why.empty()) return "a comma list, each " + why;
  }
  for (size_t i = 0; i < N; ++i) (*v)[i] = parsed[i];
  return {};
}
template <class T, size_t N>
void describe_hash(HashMix& h, const T (&v)[N]) {
  for (const T& e : v) describe_hash(h, e);
}

// ---------------------------------------------------------------- whole structs

template <Described T>
size_t hash_fields(const T& v);

namespace describe_detail {

template <class M>
void hash_member(HashMix& h, const M& m) {
  if constexpr (Described<M>) h.word(hash_fields(m));
  else describe_hash(h, m);
}

template <class M>
bool member_equal(const M& a, const M& b) {
  if constexpr (std::is_array_v<M>) {
    for (size_t i = 0; i < std::extent_v<M>; ++i)
      if (!member_equal(a[i], b[i])) return false;
    return true;
  } else if constexpr (std::is_same_v<M, TensorLayout>) {
    return a.identical(b);
  } else {
    return a == b;
  }
}

template <class T>
void put_fields(std::string& out, const T& v, const T& def, const std::string& prefix);

template <class M>
void put_member(std::string& out, std::string_view name, const M& m, const M& def, const std::string& prefix) {
  if constexpr (Described<M>) {
    put_fields(out, m, def, prefix + std::string(name) + ".");
  } else if (!member_equal(m, def)) {
    if (!out.empty()) out += ' ';
    out += prefix;
    out += name;
    out += '=';
    describe_put(out, m);
  }
}

template <class T>
void put_fields(std::string& out, const T& v, const T& def, const std::string& prefix) {
  std::apply([&](const auto&... fl) { (put_member(out, fl.name, v.*(fl.member), def.*(fl.member), prefix), ...); },
             Describe<T>::kFields);
}

// Field names of T ("dtype, layout, scale.factor, ..."), for the unknown-field message.
template <class T>
void field_names(std::string& out, const std::string& prefix) {
  std::apply(
      [&](const auto&... fl) {
        (
            [&](const auto& f) {
              using M = std::remove_cvref_t<decltype(std::declval<T&>().*(f.member))>;
              if constexpr (Described<M>) {
                field_names<M>(out, prefix + std::string(f.name) + ".");
              } else {
                if (!out.empty()) out += ", ";
                out += prefix;
                out += f.name;
              }
            }(fl),
            ...);
      },
      Describe<T>::kFields);
}

struct SetResult {
  int field = -1;   // top-level field index; -1: no field has that name
  std::string why;  // what the value should have been; empty when it parsed
};

// Sets the field `key` ("seq", or "scale.factor" in a nested struct) of obj from `value`.
template <class T>
SetResult set_field(T& obj, std::string_view key, std::string_view value) {
  const size_t dot = key.find('.');
  const std::string_view head = key.substr(0, dot);
  SetResult r;
  int i = 0;
  std::apply(
      [&](const auto&... fl) {
        (
            [&](const auto& f) {
              if (r.field < 0 && f.name == head) {
                auto& m = obj.*(f.member);
                using M = std::remove_cvref_t<decltype(m)>;
                if constexpr (Described<M>) {
                  if (dot == std::string_view::npos) {
                    r.field = i, r.why = "a field of " + std::string(Describe<M>::kName) + " (" + std::string(head) + ".<field>)";
                  } else {
                    SetResult in = set_field(m, key.substr(dot + 1), value);
                    if (in.field >= 0) r.field = i, r.why = std::move(in.why);
                  }
                } else if (dot == std::string_view::npos) {
                  r.field = i;
                  r.why = describe_get(value, &m);
                }
              }
              ++i;
            }(fl),
            ...);
      },
      Describe<T>::kFields);
  return r;
}

// Splits "k=v k=v" at white space; calls f(key, value) for each token, or returns a message.
Status for_each_assignment(std::string_view type_name, std::string_view text,
                           const void* ctx, std::string (*f)(const void* ctx, std::string_view key, std::string_view value));

}  // namespace describe_detail

template <Described T>
size_t hash_fields(const T& v) {
  HashMix h;
  for_each_field(v, [&](std::string_view, const auto& m) { describe_detail::hash_member(h, m); });
  return static_cast<size_t>(h.h);
}

// Every field equal (layouts identical on every axis): the equality hash_fields is consistent with.
template <Described T>
bool fields_equal(const T& a, const T& b) {
  bool eq = true;
  std::apply([&](const auto&... fl) { ((eq = eq && describe_detail::member_equal(a.*(fl.member), b.*(fl.member))), ...); },
             Describe<T>::kFields);
  return eq;
}

// The fields of v that differ from a default-constructed T, as "name=value" separated by spaces
// ("dtype=bf16 seq=32768 heads_q=32"; nested structs as "scale.factor=8").
template <Described T>
std::string to_string(const T& v) {
  static const T def{};
  std::string out;
  describe_detail::put_fields(out, v, def, std::string());
  return out;
}

// Parses what to_string wrote onto a default-constructed T. Errors (InvalidProblem) name the
// field: an unknown name lists the fields there are; a malformed value says what was expected.
template <Described T>
Status from_string(std::string_view text, T* out) {
  struct Ctx {
    T* obj;
    uint64_t given;
  } ctx{out, 0};
  *out = T{};
  Status s = describe_detail::for_each_assignment(
      Describe<T>::kName, text, &ctx, [](const void* c, std::string_view key, std::string_view value) -> std::string {
        Ctx& x = *static_cast<Ctx*>(const_cast<void*>(c));
        describe_detail::SetResult r = describe_detail::set_field(*x.obj, key, value);
        if (r.field < 0) {
          std::string names;
          describe_detail::field_names<T>(names, std::string());
          return "unknown field '" + std::string(key) + "' (fields: " + names + ")";
        }
        if (r.field < 64) x.given |= uint64_t{1} << r.field;
        if (!r.why.empty()) return std::string(key) + " = '" + std::string(value) + "' must be " + r.why;
        return {};
      });
  if (!s.ok()) return s;
  if constexpr (requires { describe_complete(*out, uint64_t{}); }) describe_complete(*out, ctx.given);
  return {};
}

}  // namespace baracuda

// One std::hash for every described type (descriptors as keys of unordered containers).
template <baracuda::Described T>
struct std::hash<T> {
  size_t operator()(const T& v) const { return baracuda::hash_fields(v); }
};
