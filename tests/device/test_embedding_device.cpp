// Device tier for embedding / embedding_bag: forward and backward (sort and scatter) of every
// dtype × index dtype over contiguous, misaligned, padded-row and permuted views, with heavy
// rows (> 64 terms), padding, out-of-range indices (counted), empty bags, per-sample weights and
// their gradient, both bag forms, against the float64 reference (poisoned outputs, canary
// gaps); bitwise reruns of the sort path; graph capture; > 2^31 output elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "baracuda/baracuda.hpp"
#include "device/device_harness.hpp"
#include "embedding_ref.hpp"

using namespace baracuda;
using namespace baracuda::test;

namespace {

constexpr uint8_t kPoison = 0xFF;

ErrorStats g_stats[2];  // fwd, bwd

std::vector<double> values(const StridedBuffer& s) { return logical_values(s); }
std::vector<double> absv(std::vector<double> v) { return abs_values(std::move(v)); }
StridedBuffer make_buf(DType dt, std::vector<int64_t> shape, Layout l, std::mt19937_64* rng) {
  return poisoned_buffer(dt, std::move(shape), l, kPoison, rng);
}
StridedBuffer make_index_buf(DType it, std::vector<int64_t> shape, Layout l, const std::vector<int64_t>& v) {
  StridedBuffer b(it, std::move(shape), l);
  b.fill_storage(0x7F);
  for (int64_t f = 0; f < b.numel(); ++f) b.set_bits(f, static_cast<uint64_t>(v[static_cast<size_t>(f)]));
  b.upload();
  return b;
}

// Indices: 0 uniform, 1 heavy (most positions on 3 rows: > 64 terms per row), 2 with out-of-range
// values (−1, V, V + 7) among uniform ones. Returns how many are out of range.
std::vector<int64_t> make_indices(int64_t n, int64_t V, int pattern, std::mt19937_64& rng, int64_t* bad) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  *bad = 0;
  for (auto& e : v) {
    e = static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(V, 1)));
    if (pattern == 1 && rng() % 8 != 0) e = static_cast<int64_t>(rng() % 3) % std::max<int64_t>(V, 1);
    if (pattern == 2 && rng() % 6 == 0) {
      const int64_t c[3] = {-1, V, V + 7};
      e = c[rng() % 3];
    }
    *bad += (e < 0 || e >= V);
  }
  return v;
}

bool compare(const char* what, const std::string& repro, StridedBuffer& got, const std::vector<double>& want,
             const std::vector<double>& mag, DType acc_dt, ErrorStats& S) {
  return download_and_check_gaps(what, repro, got, kPoison) &&
         within_tolerance(what, repro, values(got), want, mag, got.dtype, acc_dt, S);
}

int64_t read_counter(void* dev) {
  int64_t v = 0;
  cudaMemcpy(&v, dev, 8, cudaMemcpyDeviceToHost);
  return v;
}

struct DevMem {
  void* p = nullptr;
  explicit DevMem(size_t n) {
    if (n > 0) EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess);
    if (p) cudaMemset(p, 0, n);
  }
  ~DevMem() { cudaFree(p); }
};

TensorMut counter_view(void* p) {
  TensorMut c;
  c.data = p, c.dtype = DType::i64, c.rank = 1, c.shape[0] = 1, c.stride[0] = 1;
  return c;
}

// ---------------------------------------------------------------- embedding

bool run_embedding(DType dt, DType it, int64_t V, int64_t D, std::vector<int64_t> ishape, Layout wl, Layout il,
                   int pattern, bool pad, bool scale, bool sorted, uint64_t seed) {
  int64_t N = 1;
  for (int64_t e : ishape) N *= e;
  char buf[300];
  std::snprintf(buf, sizeof buf, "embedding %s idx:%s V%lld D%lld idx%s wview %s iview %s pattern %d%s%s %s seed %llu",
                std::string(dtype_name(dt)).c_str(), std::string(dtype_name(it)).c_str(), (long long)V, (long long)D,
                shape_str(ishape).c_str(), layout_name(wl), layout_name(il), pattern, pad ? " pad" : "",
                scale ? " scale" : "", sorted ? "sort" : "scatter", (unsigned long long)seed);
  const std::string repro = buf;
  std::mt19937_64 rng(seed);
  int64_t bad = 0;
  const std::vector<int64_t> iv = make_indices(N, V, pattern, rng, &bad);
  EmbeddingDescriptor d;
  d.dtype = dt, d.index_dtype = it, d.num_embeddings = V, d.embedding_dim = D, d.num_indices = N;
  if (pad) d.padding_idx = V > 1 ? -2 : 0;  // exercises the negative form
  d.scale_grad_by_freq = scale;
  d.count_invalid = true;
  if (!sorted) d.backward_algo = EmbeddingBackwardAlgo::kScatter;
  PlanPreference pref;
  pref.determinism = sorted ? Determinism::kRunToRun : Determinism::kAny;
  auto fp = EmbeddingPlan::select(d, pref);
  auto bp = EmbeddingBackwardPlan::select(d, pref);
  EXPECT_TRUE(fp.ok() && bp.ok()) << repro;
  if (!fp.ok() || !bp.ok()) return false;
  std::vector<int64_t> oshape = ishape;
  oshape.push_back(D);
  StridedBuffer w = make_buf(dt, {V, D}, wl, &rng), out = make_buf(dt, oshape, wl, nullptr);
  StridedBuffer g = make_buf(dt, oshape, wl, &rng), dw = make_buf(dt, {V, D}, wl, nullptr);
  StridedBuffer idx = make_index_buf(it, ishape, il, iv);
  DevMem counters(16), ws(bp->workspace_size());
  EmbeddingArgs fa{w.ref(), idx.ref(), out.mut(), counter_view(counters.p)};
  EmbeddingBackwardArgs ba{idx.ref(), g.ref(), dw.mut(), counter_view(static_cast<char*>(counters.p) + 8)};
  Status s1 = fp->run(nullptr, {}, fa), s2 = bp->run(nullptr, {ws.p, bp->workspace_size()}, ba);
  EXPECT_TRUE(s1.ok() && s2.ok()) << repro << ": " << s1.to_string() << " / " << s2.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << repro;
  if (!s1.ok() || !s2.ok()) return false;
  EXPECT_EQ(read_counter(counters.p), bad) << repro << " forward invalid count";
  EXPECT_EQ(read_counter(static_cast<char*>(counters.p) + 8), bad) << repro << " backward invalid count";
  const ref::EmbShape rs{V, D, pad ? (V > 1 ? V - 2 : 0) : -1};
  std::vector<double> ro, rdw, mdw;
  const auto wv = values(w), gv = values(g);
  ref::embedding_forward(rs, wv, iv, &ro);
  ref::embedding_backward(rs, iv, gv, scale, &rdw);
  ref::embedding_backward(rs, iv, absv(gv), scale, &mdw);
  bool ok = compare("out", repro, out, ro, std::vector<double>(ro.size(), 0.0), dt, g_stats[0]);
  ok = ok && compare("dweight", repro, dw, rdw, mdw, dt, g_stats[1]);
  ++g_stats[0].cases, ++g_stats[1].cases;
  return ok;
}

// ---------------------------------------------------------------- embedding_bag

struct BagCase {
  DType dt = DType::f32, it = DType::i64;
  EmbeddingBagMode mode = EmbeddingBagMode::kSum;
  int64_t V = 50, D = 16, B = 7, bag_size = 0;  // bag_size 0: offsets form
  bool include_last = false, psw = false, pad = false, sorted = true;
  int pattern = 0;
  Layout wl = Layout::kContiguous;
};

bool run_bag(const BagCase& c, uint64_t seed) {
  char buf[300];
  std::snprintf(buf, sizeof buf, "embedding_bag %s %s idx:%s V%lld D%lld B%lld bag_size %lld%s%s%s pattern %d wview %s %s seed %llu",
                std::string(enum_name(c.mode)).c_str(), std::string(dtype_name(c.dt)).c_str(),
                std::string(dtype_name(c.it)).c_str(), (long long)c.V, (long long)c.D, (long long)c.B,
                (long long)c.bag_size, c.include_last ? " include_last" : "", c.psw ? " psw" : "", c.pad ? " pad" : "",
                c.pattern, layout_name(c.wl), c.sorted ? "sort" : "scatter", (unsigned long long)seed);
  const std::string repro = buf;
  std::mt19937_64 rng(seed);
  // offsets: random bag lengths in [0, 2·avg] including empty bags, non-decreasing
  std::vector<int64_t> offsets;
  int64_t N = c.bag_size * c.B;
  if (c.bag_size == 0) {
    int64_t at = 0;
    for (int64_t b = 0; b < c.B; ++b) {
      offsets.push_back(at);
      at += (b % 5 == 2) ? 0 : static_cast<int64_t>(rng() % 160);  // some bags above 64 (heavy)
    }
    N = at;
    if (c.include_last) offsets.push_back(N);
  }
  int64_t bad_all = 0;
  const std::vector<int64_t> iv = make_indices(N, c.V, c.pattern, rng, &bad_all);
  EmbeddingBagDescriptor d;
  d.dtype = c.dt, d.index_dtype = c.it, d.num_embeddings = c.V, d.embedding_dim = c.D, d.mode = c.mode;
  d.num_bags = c.B, d.bag_size = c.bag_size, d.num_indices = c.bag_size > 0 ? 0 : N;
  d.include_last_offset = c.include_last, d.per_sample_weights = c.psw, d.per_sample_weights_grad = c.psw;
  if (c.pad) d.padding_idx = 1;
  d.count_invalid = true;
  if (!c.sorted && c.mode != EmbeddingBagMode::kMax) d.backward_algo = EmbeddingBackwardAlgo::kScatter;
  PlanPreference pref;
  pref.determinism = c.sorted ? Determinism::kRunToRun : Determinism::kAny;
  auto fp = EmbeddingBagPlan::select(d, pref);
  auto bp = EmbeddingBagBackwardPlan::select(d, pref);
  EXPECT_TRUE(fp.ok() && bp.ok()) << repro << " " << fp.status().to_string() << " " << bp.status().to_string();
  if (!fp.ok() || !bp.ok()) return false;
  const std::vector<int64_t> ishape = c.bag_size > 0 ? std::vector<int64_t>{c.B, c.bag_size} : std::vector<int64_t>{N};
  const bool max = c.mode == EmbeddingBagMode::kMax;
  StridedBuffer w = make_buf(c.dt, {c.V, c.D}, c.wl, &rng), out = make_buf(c.dt, {c.B, c.D}, c.wl, nullptr);
  StridedBuffer g = make_buf(c.dt, {c.B, c.D}, c.wl, &rng), dw = make_buf(c.dt, {c.V, c.D}, c.wl, nullptr);
  StridedBuffer psw = make_buf(c.dt, ishape, Layout::kContiguous, &rng), dpsw = make_buf(c.dt, ishape, Layout::kOffset1, nullptr);
  StridedBuffer mi = make_buf(c.it, {c.B, c.D}, c.wl == Layout::kPermuted ? Layout::kPermuted : Layout::kContiguous, nullptr);
  StridedBuffer idx = make_index_buf(c.it, ishape, c.bag_size > 0 ? Layout::kPermuted : Layout::kContiguous, iv);
  StridedBuffer off = make_index_buf(c.it, {static_cast<int64_t>(offsets.size())}, Layout::kStep2, offsets);
  DevMem counters(16), ws(bp->workspace_size());
  EmbeddingBagArgs fa{w.ref(), idx.ref(), off.ref(), c.psw ? psw.ref() : TensorRef{}, out.mut(),
                      max ? mi.mut() : TensorMut{}, counter_view(counters.p)};
  Status s1 = fp->run(nullptr, {}, fa);
  EXPECT_TRUE(s1.ok()) << repro << ": " << s1.to_string();
  if (!s1.ok()) return false;
  EmbeddingBagBackwardArgs ba{idx.ref(), off.ref(), c.psw ? psw.ref() : TensorRef{}, max ? mi.ref() : TensorRef{},
                              c.psw ? w.ref() : TensorRef{},  // weight: an operand only for the per-sample-weight gradient
                              g.ref(),   dw.mut(), c.psw ? dpsw.mut() : TensorMut{},
                              counter_view(static_cast<char*>(counters.p) + 8)};
  Status s2 = bp->run(nullptr, {ws.p, bp->workspace_size()}, ba);
  EXPECT_TRUE(s2.ok()) << repro << ": " << s2.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << repro;
  if (!s2.ok()) return false;
  // reference
  std::vector<int64_t> lo, hi;
  if (c.bag_size > 0) {
    for (int64_t b = 0; b < c.B; ++b) lo.push_back(b * c.bag_size), hi.push_back((b + 1) * c.bag_size);
  } else {
    ref::bag_ranges_from_offsets(offsets, c.B, N, c.include_last, &lo, &hi);
  }
  EXPECT_EQ(read_counter(counters.p), bad_all) << repro << " forward invalid count";
  EXPECT_EQ(read_counter(static_cast<char*>(counters.p) + 8), bad_all) << repro << " backward invalid count";
  const ref::EmbShape rs{c.V, c.D, c.pad ? 1 : -1};
  const ref::BagMode rm = c.mode == EmbeddingBagMode::kSum ? ref::BagMode::kSum
                          : c.mode == EmbeddingBagMode::kMean ? ref::BagMode::kMean : ref::BagMode::kMax;
  const auto wv = values(w), gv = values(g), pv = c.psw ? values(psw) : std::vector<double>{};
  std::vector<double> ro, mo, rdw, mdw, rdp, mdp;
  std::vector<int64_t> rmi, mmi;
  ref::embedding_bag_forward(rs, rm, wv, iv, lo, hi, pv, &ro, &rmi);
  ref::embedding_bag_forward(rs, rm == ref::BagMode::kMax ? ref::BagMode::kSum : rm, absv(wv), iv, lo, hi, absv(pv), &mo, &mmi);
  if (max) std::fill(mo.begin(), mo.end(), 0.0);
  bool ok = compare("out", repro, out, ro, mo, c.dt, g_stats[0]);
  std::vector<int64_t> gmi;
  if (max) {
    mi.download();
    for (int64_t f = 0; f < mi.numel(); ++f) gmi.push_back(static_cast<int64_t>(bits_to_double(c.it, mi.get_bits(f))));
    if (gmi != rmi) {
      ADD_FAILURE() << repro << ": max_indices differ from the reference";
      ok = false;
    }
  }
  ref::embedding_bag_backward(rs, rm, wv, iv, lo, hi, pv, gmi, gv, false, &rdw, c.psw ? &rdp : nullptr);
  ref::embedding_bag_backward(rs, rm, absv(wv), iv, lo, hi, absv(pv), gmi, absv(gv), false, &mdw, c.psw ? &mdp : nullptr);
  ok = ok && compare("dweight", repro, dw, rdw, mdw, c.dt, g_stats[1]);
  if (c.psw) ok = ok && compare("dper_sample_weights", repro, dpsw, rdp, mdp, c.dt, g_stats[1]);
  ++g_stats[0].cases, ++g_stats[1].cases;
  return ok;
}

void print_stats() {
  const char* n[2] = {"fwd", "bwd"};
  for (int i = 0; i < 2; ++i)
    std::printf("[embedding %s] %lld cases, %lld elements, worst %.3f of tolerance (%s)\n", n[i],
                (long long)g_stats[i].cases, (long long)g_stats[i].elements, g_stats[i].worst, g_stats[i].worst_at.c_str());
}

const DType kDts[] = {DType::f32, DType::f16, DType::bf16, DType::f64};

}  // namespace

TEST(EmbeddingDevice, EveryDtypeIndexViewPattern) {
  BARACUDA_REQUIRE_GPU();
  const Layout wviews[] = {Layout::kContiguous, Layout::kOffset1, Layout::kPaddedRows, Layout::kPermuted};
  struct Shape {
    int64_t V, D;
    std::vector<int64_t> ishape;
  };
  const Shape shapes[] = {{1, 1, {1}}, {10, 24, {3, 50}}, {300, 128, {700}}, {37, 520, {2, 3, 40}}, {2000, 64, {0}},
                          {5, 8, {2, 4}}, {1000, 4096, {96}}};
  uint64_t seed = 1;
  int fails = 0;
  for (DType dt : kDts)
    for (DType it : {DType::i32, DType::i64})
      for (Layout wl : wviews)
        for (int pattern : {0, 1, 2}) {
          const Shape& s = shapes[seed % std::size(shapes)];
          const Layout il = s.ishape.size() >= 2 && seed % 2 ? Layout::kPermuted : Layout::kStep2;
          fails += !run_embedding(dt, it, s.V, s.D, s.ishape, wl, il, pattern, seed % 3 == 0, seed % 4 == 1, seed % 2 == 0, seed);
          ++seed;
          if (fails > 3) break;
        }
  print_stats();
  EXPECT_EQ(fails, 0);
}

TEST(EmbeddingDevice, BagsEveryModeFormDtype) {
  BARACUDA_REQUIRE_GPU();
  uint64_t seed = 100;
  int fails = 0;
  for (DType dt : kDts)
    for (EmbeddingBagMode mode : {EmbeddingBagMode::kSum, EmbeddingBagMode::kMean, EmbeddingBagMode::kMax})
      for (int form = 0; form < 3; ++form)  // 2-D, offsets, offsets + include_last
        for (int variant = 0; variant < 2; ++variant) {
          BagCase c;
          c.dt = dt, c.mode = mode, c.it = seed % 2 ? DType::i32 : DType::i64;
          c.bag_size = form == 0 ? (variant ? 32 : 3) : 0, c.include_last = form == 2;
          c.psw = mode == EmbeddingBagMode::kSum && variant == 1;
          c.pad = seed % 3 != 0, c.sorted = seed % 2 == 0, c.pattern = static_cast<int>(seed % 3);
          const int64_t Ds[] = {16, 128, 5, 96, 1, 264};
          c.D = Ds[seed % std::size(Ds)];
          c.V = variant ? 2000 : 40;
          c.B = variant ? 90 : 11;
          const Layout wls[] = {Layout::kContiguous, Layout::kOffset1, Layout::kPaddedRows, Layout::kPermuted};
          c.wl = wls[seed % 4];
          fails += !run_bag(c, seed++);
          if (fails > 3) break;
        }
  print_stats();
  EXPECT_EQ(fails, 0);
}

// The sort path is bitwise reproducible (heavy rows included); graph capture replays it.
TEST(EmbeddingDevice, SortDeterministicAndGraphCapturable) {
  BARACUDA_REQUIRE_GPU();
  const int64_t V = 500, D = 256, N = 20000;
  std::mt19937_64 rng(5);
  int64_t bad = 0;
  const std::vector<int64_t> iv = make_indices(N, V, 1, rng, &bad);
  EmbeddingDescriptor d;
  d.dtype = DType::f32, d.num_embeddings = V, d.embedding_dim = D, d.num_indices = N;
  PlanPreference pref;
  pref.determinism = Determinism::kRunToRun;
  auto bp = EmbeddingBackwardPlan::select(d, pref);
  ASSERT_TRUE(bp.ok());
  StridedBuffer g = make_buf(DType::f32, {N, D}, Layout::kContiguous, &rng);
  StridedBuffer dw1 = make_buf(DType::f32, {V, D}, Layout::kContiguous, nullptr), dw2 = make_buf(DType::f32, {V, D}, Layout::kContiguous, nullptr);
  StridedBuffer idx = make_index_buf(DType::i64, {N}, Layout::kContiguous, iv);
  DevMem ws(bp->workspace_size());
  ASSERT_TRUE(bp->run(nullptr, {ws.p, bp->workspace_size()}, {idx.ref(), g.ref(), dw1.mut(), {}}).ok());
  // the graph below runs on a non-blocking stream with the same workspace: finish this run first
  // (without it, compute-sanitizer's slow kernels let the two overlap)
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  cudaStream_t s;
  BARACUDA_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  BARACUDA_CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  Status st = bp->run(s, {ws.p, bp->workspace_size()}, {idx.ref(), g.ref(), dw2.mut(), {}});
  BARACUDA_CUDA_OK(cudaStreamEndCapture(s, &graph));
  ASSERT_TRUE(st.ok()) << st.to_string();
  BARACUDA_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  BARACUDA_CUDA_OK(cudaGraphLaunch(exec, s));
  BARACUDA_CUDA_OK(cudaGraphLaunch(exec, s));
  BARACUDA_CUDA_OK(cudaStreamSynchronize(s));
  dw1.download(), dw2.download();
  EXPECT_EQ(dw1.host, dw2.host) << "sort-path dweight differs between runs";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

// Output beyond 2^31 elements (64-bit offsets): 2^20 + 3 rows of 2048 bf16.
TEST(EmbeddingDevice, BeyondInt32Elements) {
  BARACUDA_REQUIRE_GPU();
  const int64_t V = 4096, D = 2048, N = (int64_t{1} << 20) + 3;
  EmbeddingDescriptor d;
  d.dtype = DType::bf16, d.num_embeddings = V, d.embedding_dim = D, d.num_indices = N;
  auto fp = EmbeddingPlan::select(d);
  ASSERT_TRUE(fp.ok());
  std::vector<int64_t> iv(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) iv[static_cast<size_t>(i)] = (i * 7919) % V;
  std::mt19937_64 rng(9);
  StridedBuffer w = make_buf(DType::bf16, {V, D}, Layout::kContiguous, &rng);
  StridedBuffer idx = make_index_buf(DType::i64, {N}, Layout::kContiguous, iv);
  void* out = nullptr;
  BARACUDA_CUDA_OK(cudaMalloc(&out, static_cast<size_t>(N * D) * 2));
  TensorMut o;
  o.data = out, o.dtype = DType::bf16, o.rank = 2, o.shape[0] = N, o.shape[1] = D, o.stride[0] = D, o.stride[1] = 1;
  ASSERT_TRUE(fp->run(nullptr, {}, {w.ref(), idx.ref(), o, {}}).ok());
  BARACUDA_CUDA_OK(cudaDeviceSynchronize());
  for (int64_t row : {int64_t{0}, N / 2, N - 1}) {
    std::vector<uint16_t> got(static_cast<size_t>(D));
    cudaMemcpy(got.data(), static_cast<char*>(out) + row * D * 2, static_cast<size_t>(D) * 2, cudaMemcpyDeviceToHost);
    const int64_t r = iv[static_cast<size_t>(row)];
    for (int64_t c = 0; c < D; c += 97) EXPECT_EQ(got[static_cast<size_t>(c)], static_cast<uint16_t>(w.get_bits(r * D + c))) << row;
  }
  cudaFree(out);
}
