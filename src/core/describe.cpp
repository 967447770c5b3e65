// The leaf codecs of describe.hpp: text and hash of numbers, Scalars and tensor layouts, the
// list splitter and the "k=v k=v" tokenizer.
#include "baracuda/core/describe.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

#include "core/validate.hpp"

namespace baracuda {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Shortest text that reads back as the same double; always has a '.', an exponent, "inf" or
// "nan", so a float Scalar never reads back as an integer.
void put_double(std::string& out, double v, bool mark_float) {
  if (std::isnan(v)) {
    out += "nan";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-inf" : "inf";
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  const std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
  out += s;
  if (mark_float && s.find_first_of(".e") == std::string_view::npos) out += ".0";
}

std::string get_double(std::string_view s, double* v) {
  if (s == "nan" || s == "+nan" || s == "-nan") return *v = std::nan(""), std::string();
  if (s == "inf" || s == "+inf") return *v = INFINITY, std::string();
  if (s == "-inf") return *v = -INFINITY, std::string();
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  double d = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return "a number";
  *v = d;
  return {};
}

template <class I>
std::string get_integer(std::string_view s, I* v, const char* what) {
  int base = 10;
  bool neg = false;
  std::string_view t = s;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) neg = t[0] == '-', t.remove_prefix(1);
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) base = 16, t.remove_prefix(2);
  if (t.empty()) return what;
  uint64_t u = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), u, base);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return what;
  if constexpr (std::is_signed_v<I>) {
    if (neg ? u > uint64_t{1} << 63 : u > static_cast<uint64_t>(INT64_MAX)) return what;
    *v = neg ? static_cast<I>(0 - u) : static_cast<I>(u);
  } else {
    if (neg && u != 0) return what;
    *v = u;
  }
  return {};
}

// "[2,3]" -> shape; returns the rest of s after the closing bracket, or nullopt.
bool get_dims(std::string_view* s, char open, char close, int64_t* dims, int* n) {
  if (s->empty() || (*s)[0] != open) return false;
  const size_t end = s->find(close);
  if (end == std::string_view::npos) return false;
  std::string_view body = s->substr(1, end - 1);
  *n = 0;
  while (!body.empty()) {
    if (*n == kMaxRank) return false;
    const size_t c = body.find(',');
    int64_t v = 0;
    if (!get_integer(body.substr(0, c), &v, "x").empty()) return false;
    dims[(*n)++] = v;
    body = c == std::string_view::npos ? std::string_view{} : body.substr(c + 1);
  }
  s->remove_prefix(end + 1);
  return true;
}

}  // namespace

void describe_put(std::string& out, bool v) { out += v ? "true" : "false"; }
void describe_put(std::string& out, int64_t v) { out += std::to_string(v); }
void describe_put(std::string& out, uint64_t v) { out += std::to_string(v); }
void describe_put(std::string& out, double v) { put_double(out, v, false); }

void describe_put(std::string& out, const Scalar& v) {
  if (v.is_bool()) out += v.i ? "true" : "false";
  else if (v.is_int()) out += std::to_string(v.i);
  else put_double(out, v.f, true);
}

void describe_put(std::string& out, const TensorLayout& v) {
  const int r = std::clamp(v.rank, 0, kMaxRank);
  auto dims = [&](const int64_t* d, char open, char close) {
    out += open;
    for (int i = 0; i < r; ++i) {
      if (i) out += ',';
      out += std::to_string(d[i]);
    }
    out += close;
  };
  out += dtype_name(v.dtype);
  dims(v.shape, '[', ']');
  if (!v.is_contiguous()) dims(v.stride, '{', '}');
}

std::string describe_get(std::string_view s, bool* v) {
  if (s == "true" || s == "1") return *v = true, std::string();
  if (s == "false" || s == "0") return *v = false, std::string();
  return "true or false";
}
std::string describe_get(std::string_view s, int64_t* v) { return get_integer(s, v, "an integer"); }
std::string describe_get(std::string_view s, uint64_t* v) { return get_integer(s, v, "an unsigned integer"); }
std::string describe_get(std::string_view s, double* v) { return get_double(s, v); }

std::string describe_get(std::string_view s, Scalar* v) {
  if (s == "true" || s == "false") return *v = Scalar(s == "true"), std::string();
  if (s.find_first_of(".eEnNiI") == std::string_view::npos) {
    int64_t i = 0;
    if (get_integer(s, &i, "x").empty()) return *v = Scalar(i), std::string();
  }
  double d = 0;
  if (get_double(s, &d).empty()) return *v = Scalar(d), std::string();
  return "a number (an integer, a float with '.' or an exponent, inf, nan) or true / false";
}

std::string describe_get(std::string_view s, TensorLayout* v) {
  const char* form = "dtype[shape] with optional {strides}, e.g. bf16[4,5] or f32[4,5]{1,4}";
  const size_t open = s.find('[');
  DType dt{};
  if (open == std::string_view::npos || !parse_dtype(s.substr(0, open), &dt)) return form;
  std::string_view rest = s.substr(open);
  TensorLayout t;
  t.dtype = dt;
  if (!get_dims(&rest, '[', ']', t.shape, &t.rank)) return form;
  t.set_contiguous_strides();
  if (!rest.empty()) {
    int n = 0;
    if (!get_dims(&rest, '{', '}', t.stride, &n) || n != t.rank || !rest.empty()) return form;
  }
  *v = t;
  return {};
}

void describe_hash(HashMix& h, double v) { h.word(std::bit_cast<uint64_t>(v)); }
void describe_hash(HashMix& h, const Scalar& v) {
  h.word(static_cast<uint64_t>(v.kind));
  h.word(v.is_int() ? static_cast<uint64_t>(v.i) : std::bit_cast<uint64_t>(v.f));
}
void describe_hash(HashMix& h, const TensorLayout& v) {
  h.word(static_cast<uint64_t>(v.dtype));
  h.word(static_cast<uint64_t>(v.rank));
  for (int i = 0; i < std::clamp(v.rank, 0, kMaxRank); ++i) h.word(static_cast<uint64_t>(v.shape[i])), h.word(static_cast<uint64_t>(v.stride[i]));
}

namespace {

// The list fields (IntList, DTypeVec): a comma list, each item by `put` / `get` (get: false on a
// malformed item); "" is the empty list, an empty item is malformed.
template <class E, class Put>
void put_list(std::string& out, const std::vector<E>& v, Put put) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    put(out, v[i]);
  }
}
template <class E, class Get>
bool get_list(std::string_view s, std::vector<E>* v, Get get) {
  std::vector<E> parsed;
  while (!s.empty()) {
    const size_t c = s.find(',');
    E x{};
    if (!get(s.substr(0, c), &x)) return false;
    parsed.push_back(x);
    if (c == std::string_view::npos) break;
    s.remove_prefix(c + 1);
    if (s.empty()) return false;
  }
  *v = std::move(parsed);
  return true;
}
template <class E>
void hash_list(HashMix& h, const std::vector<E>& v) {
  h.word(v.size());
  for (E x : v) h.word(static_cast<uint64_t>(x));
}

}  // namespace

void describe_put(std::string& out, const IntList& v) {
  put_list(out, v.v, [](std::string& o, int64_t x) { o += std::to_string(x); });
}
std::string describe_get(std::string_view s, IntList* v) {
  const bool ok = get_list(s, &v->v, [](std::string_view t, int64_t* x) { return get_integer(t, x, "x").empty(); });
  return ok ? std::string() : "a comma list of integers";
}
void describe_hash(HashMix& h, const IntList& v) { hash_list(h, v.v); }

void describe_put(std::string& out, const DTypeVec& v) {
  put_list(out, v.v, [](std::string& o, DType t) { o += dtype_name(t); });
}
std::string describe_get(std::string_view s, DTypeVec* v) {
  const bool ok = get_list(s, &v->v, [](std::string_view t, DType* x) { return parse_dtype(t, x); });
  return ok ? std::string() : "a comma list of dtype names";
}
void describe_hash(HashMix& h, const DTypeVec& v) { hash_list(h, v.v); }

namespace describe_detail {

int split_list(std::string_view s, std::string_view* items, int cap) {
  int n = 0, depth = 0;
  size_t b = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    const char c = i < s.size() ? s[i] : ',';
    if (c == '[' || c == '{' || c == '(') ++depth;
    else if (c == ']' || c == '}' || c == ')') --depth;
    else if (c == ',' && depth <= 0) {
      if (n == cap) return -1;
      items[n++] = s.substr(b, i - b);
      b = i + 1;
    }
  }
  return n;
}

Status for_each_assignment(std::string_view type_name, std::string_view text, const void* ctx,
                           std::string (*f)(const void* ctx, std::string_view key, std::string_view value)) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j == i) break;
    const std::string_view tok = text.substr(i, j - i);
    const size_t eq = tok.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return error(StatusCode::kInvalidProblem, type_name, ": '", tok, "' is not of the form name=value");
    if (std::string why = f(ctx, tok.substr(0, eq), tok.substr(eq + 1)); !why.empty())
      return error(StatusCode::kInvalidProblem, type_name, ": ", why);
    i = j;
  }
  return {};
}

}  // namespace describe_detail

}  // namespace baracuda
