// Causal conv1d benchmark: the shapes [B, L, C] = [4, 8192, 4096], [1, 8192, 32768],
// [8, 4096, 2048], width 4, SiLU, bias, in both layouts (channel-last [B, L, C] and
// channel-first [B, C, L]), bf16 and f32; forward and backward (always the deterministic path).
// Bytes: forward x + y, backward x + dy + dx (weights, partial sums not counted). Sampled
// outputs and whole dweight / dbias rows of a few channels are checked against float64 sums.
// The decode step (update) is timed on [B, C] = [1, 5120], [64, 8192], [256, 8192], one token.
// Each case is timed twice: CUDA events around one run() (host checks and launches included) and
// per call under graph replay (device time). --conv1d-json FILE writes records for
// bench/torch_conv1d_side_by_side.py.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/half_bits.hpp"
#include "bench_data.hpp"
#include "timing.hpp"

namespace baracuda::bench {

namespace {

struct ConvCase {
  std::string name;
  DType dt;
  Conv1dLayout layout;
  int64_t B, L, C;
  int W = 4;
};

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cs;
  const int64_t shapes[3][3] = {{4, 8192, 4096}, {1, 8192, 32768}, {8, 4096, 2048}};
  for (DType dt : {DType::bf16, DType::f32})
    for (Conv1dLayout l : {Conv1dLayout::kBLC, Conv1dLayout::kBCL})
      for (const auto& s : shapes) {
        if (dt == DType::f32 && s[0] != 4) continue;  // f32 on the first shape only
        cs.push_back({std::string(enum_name(l)) + "_" + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
                          std::to_string(s[2]),
                      dt, l, s[0], s[1], s[2]});
      }
  return cs;
}

CausalConv1dDescriptor descriptor_of(const ConvCase& c) {
  CausalConv1dDescriptor d;
  d.dtype = c.dt;
  d.weight_dtype = c.dt;
  d.layout = c.layout;
  d.batch = c.B;
  d.channels = c.C;
  d.seq = c.L;
  d.width = c.W;
  return d;
}

std::vector<uint8_t> download(const void* dev, size_t bytes) {
  std::vector<uint8_t> h(bytes);
  BENCH_CUDA_OK(cudaMemcpy(h.data(), dev, bytes, cudaMemcpyDeviceToHost));
  return h;
}

// Host view of one [B, C, L]-indexed tensor of the case's layout (0 before t = 0).
struct HostData {
  const ConvCase* c;
  const std::vector<uint8_t>* bytes;
  double at(int64_t b, int64_t ch, int64_t t) const {
    if (t < 0) return 0.0;
    const int64_t i = c->layout == Conv1dLayout::kBCL ? (b * c->C + ch) * c->L + t : (b * c->L + t) * c->C + ch;
    return bf16_or_f32_at(c->dt, bytes->data() + i * dtype_size(c->dt));
  }
};
double w_at(const ConvCase& c, const std::vector<uint8_t>& h, int64_t i) {
  return bf16_or_f32_at(c.dt, h.data() + i * dtype_size(c.dt));
}

double silu(double z) { return z / (1 + std::exp(-z)); }

// 2000 sampled y and dx elements, and dweight / dbias of 3 channels, against float64 sums.
bool verify(const ConvCase& c, const std::vector<uint8_t>& xh, const std::vector<uint8_t>& dyh,
            const std::vector<uint8_t>& wh, const std::vector<uint8_t>& bh, const void* y, const void* dx,
            const void* dw, const void* db) {
  const size_t es = dtype_size(c.dt);
  const int64_t n = c.B * c.C * c.L;
  const auto yh = download(y, n * es), dxh = download(dx, n * es), dwh = download(dw, c.C * c.W * es),
             dbh = download(db, c.C * es);
  const HostData X{&c, &xh}, DY{&c, &dyh}, Y{&c, &yh}, DX{&c, &dxh};
  const int W = c.W;
  auto z_at = [&](int64_t b, int64_t ch, int64_t t) {
    double z = w_at(c, bh, ch);
    for (int k = 0; k < W; ++k) z += w_at(c, wh, ch * W + k) * X.at(b, ch, t - (W - 1) + k);
    return z;
  };
  auto dz_at = [&](int64_t b, int64_t ch, int64_t t) {
    if (t >= c.L) return 0.0;
    const double z = z_at(b, ch, t), s = 1 / (1 + std::exp(-z));
    return DY.at(b, ch, t) * s * (1 + z * (1 - s));
  };
  const double eps = c.dt == DType::f32 ? 1e-5 : 1.6e-2;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    const int64_t b = rng() % c.B, ch = rng() % c.C, t = i < 8 ? i : rng() % c.L;
    const double want_y = silu(z_at(b, ch, t));
    double want_dx = 0, mag = 0;
    for (int k = 0; k < W; ++k) {
      const double g = dz_at(b, ch, t + (W - 1) - k);
      want_dx += w_at(c, wh, ch * W + k) * g;
      mag += std::fabs(w_at(c, wh, ch * W + k) * g);
    }
    if (std::fabs(Y.at(b, ch, t) - want_y) > eps * (1 + std::fabs(want_y)) ||
        std::fabs(DX.at(b, ch, t) - want_dx) > eps * (1 + mag)) {
      std::fprintf(stderr, "conv1d %s: (b %lld, c %lld, t %lld) y %g want %g, dx %g want %g\n", c.name.c_str(),
                   (long long)b, (long long)ch, (long long)t, Y.at(b, ch, t), want_y, DX.at(b, ch, t), want_dx);
      return false;
    }
  }
  for (int64_t ch : {int64_t{0}, c.C / 2, c.C - 1}) {
    double dwv[8] = {}, dbv = 0, mag = 0;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = 0; t < c.L; ++t) {
        const double g = dz_at(b, ch, t);
        dbv += g;
        mag += std::fabs(g);
        for (int k = 0; k < W; ++k) dwv[k] += g * X.at(b, ch, t - (W - 1) + k);
      }
    for (int k = 0; k <= W; ++k) {
      const double got = k < W ? w_at(c, dwh, ch * W + k) : w_at(c, dbh, ch), want = k < W ? dwv[k] : dbv;
      if (std::fabs(got - want) > eps * (std::fabs(want) + 1) + 1e-5 * mag) {
        std::fprintf(stderr, "conv1d %s: channel %lld %s[%d] %g want %g\n", c.name.c_str(), (long long)ch,
                     k < W ? "dweight" : "dbias", k, got, want);
        return false;
      }
    }
  }
  return true;
}

// Decode step (CausalConv1dUpdatePlan): one new token per (b, c) row, channel-first x / y
// [B, C, 1], shift state [B, C, W−1] updated in place, width 4, SiLU, bias. Recorded as ConvCase
// with L = the new tokens and direction "update"; bytes: x + y + the state read and written.
std::vector<ConvCase> update_cases() {
  std::vector<ConvCase> cs;
  for (const auto& s : {std::array<int64_t, 2>{1, 5120}, {64, 8192}, {256, 8192}})
    cs.push_back({"update_" + std::to_string(s[0]) + "x" + std::to_string(s[1]), DType::bf16, Conv1dLayout::kBCL, s[0], 1,
                  s[1]});
  return cs;
}

// Every y and the new state against float64 (state0 = the state before the step).
bool verify_update(const ConvCase& c, const std::vector<uint8_t>& xh, const std::vector<uint8_t>& s0h,
                   const std::vector<uint8_t>& wh, const std::vector<uint8_t>& bh, const void* y, const void* st) {
  const int W = c.W, S = W - 1;
  const auto yh = download(y, c.B * c.C * 2), sth = download(st, c.B * c.C * S * 2);
  for (int64_t r = 0; r < c.B * c.C; ++r) {
    const int64_t ch = r % c.C;
    auto full = [&](int k) { return k < S ? bf16_or_f32_at(c.dt, s0h.data() + (r * S + k) * 2) : bf16_or_f32_at(c.dt, xh.data() + r * 2); };
    double z = w_at(c, bh, ch);
    for (int k = 0; k < W; ++k) z += w_at(c, wh, ch * W + k) * full(k);
    const double got = bf16_or_f32_at(c.dt, yh.data() + r * 2), want = silu(z);
    bool ok = std::fabs(got - want) <= 1.6e-2 * (1 + std::fabs(want));
    for (int k = 0; k < S; ++k) ok = ok && bf16_or_f32_at(c.dt, sth.data() + (r * S + k) * 2) == full(k + 1);
    if (!ok) {
      std::fprintf(stderr, "conv1d %s: row %lld y %g want %g (or its state)\n", c.name.c_str(), (long long)r, got, want);
      return false;
    }
  }
  return true;
}

}  // namespace

bool conv1d_cases_select() {
  PlanPreference pref;
  pref.target_arch = 90;
  for (const ConvCase& c : conv_cases())
    if (!CausalConv1dPlan::select(descriptor_of(c), pref).ok() ||
        !CausalConv1dBackwardPlan::select(descriptor_of(c), pref).ok())
      return false;
  return true;
}

int run_conv1d_family(const std::string& json_path, bool quick, const std::string& filter) {
  const double ceiling = measure_copy_tbps();
  std::vector<BandwidthRec<ConvCase>> recs;
  int failures = 0;
  for (const ConvCase& c : conv_cases()) {
    if (filter_skips(filter, c.name)) continue;
    const CausalConv1dDescriptor d = descriptor_of(c);
    auto fwd = CausalConv1dPlan::select(d);
    auto bwd = CausalConv1dBackwardPlan::select(d);
    if (!fwd.ok() || !bwd.ok()) {
      std::fprintf(stderr, "conv1d %s: select failed\n", c.name.c_str());
      ++failures;
      continue;
    }
    const size_t es = dtype_size(c.dt);
    const int64_t n = c.B * c.C * c.L;
    DeviceBuffer x(n * es), y(n * es), dy(n * es), dx(n * es), w(c.C * c.W * es), b(c.C * es), dw(c.C * c.W * es),
        db(c.C * es), ws(bwd->workspace_size());
    const auto xh = fill_uniform(x.p, c.dt, n, 1, -2, 2), dyh = fill_uniform(dy.p, c.dt, n, 2, -1, 1);
    const auto wh = fill_uniform(w.p, c.dt, c.C * c.W, 3, -0.5, 0.5), bh = fill_uniform(b.p, c.dt, c.C, 4, -0.5, 0.5);
    std::vector<int64_t> shp = c.layout == Conv1dLayout::kBCL ? std::vector<int64_t>{c.B, c.C, c.L}
                                                              : std::vector<int64_t>{c.B, c.L, c.C};
    const CausalConv1dArgs fa{TensorRef::make(x.p, c.dt, shp), TensorRef::make(w.p, c.dt, {c.C, c.W}),
                              TensorRef::make(b.p, c.dt, {c.C}), {}, TensorMut::make(y.p, c.dt, shp), {}};
    const CausalConv1dBackwardArgs ba{TensorRef::make(x.p, c.dt, shp), TensorRef::make(w.p, c.dt, {c.C, c.W}),
                                      TensorRef::make(b.p, c.dt, {c.C}), {}, TensorRef::make(dy.p, c.dt, shp), {},
                                      TensorMut::make(dx.p, c.dt, shp), TensorMut::make(dw.p, c.dt, {c.C, c.W}),
                                      TensorMut::make(db.p, c.dt, {c.C}), {}};
    const Workspace wsp{ws.p, bwd->workspace_size()};
    bool ok = fwd->run(nullptr, {}, fa).ok() && bwd->run(nullptr, wsp, ba).ok();
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    ok = ok && verify(c, xh, dyh, wh, bh, y.p, dx.p, dw.p, db.p);
    const int warm = quick ? 2 : 5, reps = quick ? 10 : 40;
    const double us_f = median_us([&] { (void)fwd->run(nullptr, {}, fa); }, warm, reps);
    const double us_b = median_us([&] { (void)bwd->run(nullptr, wsp, ba); }, warm, reps);
    const int calls = 10;  // per graph; device time without the host's checks and launches
    const double g_f = median_graph_us([&](cudaStream_t s) { (void)fwd->run(s, {}, fa); }, calls, quick ? 3 : 10);
    const double g_b = median_graph_us([&](cudaStream_t s) { (void)bwd->run(s, wsp, ba); }, calls, quick ? 3 : 10);
    BENCH_CUDA_OK(cudaGetLastError());
    // the eager floor at this size: a device-to-device copy moving the same bytes, timed alike
    const double cp_f = copy_us(n * es, warm, reps), cp_b = copy_us(3 * n * es / 2, warm, reps);
    recs.push_back({c, "fwd", fwd->sku().name(), us_f, 2.0 * n * es, ok, g_f, cp_f});
    recs.push_back({c, "bwd", bwd->sku().name(), us_b, 3.0 * n * es, ok, g_b, cp_b});
    failures += !ok;
  }
  for (const ConvCase& c : update_cases()) {
    if (filter_skips(filter, c.name)) continue;
    CausalConv1dUpdateDescriptor d;
    d.dtype = d.weight_dtype = c.dt;
    d.batch = c.B;
    d.channels = c.C;
    d.seq = c.L;
    d.width = c.W;
    auto upd = CausalConv1dUpdatePlan::select(d);
    if (!upd.ok()) {
      std::fprintf(stderr, "conv1d %s: select failed\n", c.name.c_str());
      ++failures;
      continue;
    }
    const int64_t rows = c.B * c.C, S = c.W - 1;
    DeviceBuffer x(rows * 2), y(rows * 2), st(rows * S * 2), w(c.C * c.W * 2), b(c.C * 2);
    const auto xh = fill_uniform(x.p, c.dt, rows, 1, -2, 2), s0h = fill_uniform(st.p, c.dt, rows * S, 2, -2, 2);
    const auto wh = fill_uniform(w.p, c.dt, c.C * c.W, 3, -0.5, 0.5), bh = fill_uniform(b.p, c.dt, c.C, 4, -0.5, 0.5);
    const CausalConv1dUpdateArgs ua{TensorRef::make(x.p, c.dt, {c.B, c.C, 1}), TensorRef::make(w.p, c.dt, {c.C, c.W}),
                                    TensorRef::make(b.p, c.dt, {c.C}), {}, {},
                                    TensorMut::make(st.p, c.dt, {c.B, c.C, S}), TensorMut::make(y.p, c.dt, {c.B, c.C, 1})};
    bool ok = upd->run(nullptr, {}, ua).ok();
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    ok = ok && verify_update(c, xh, s0h, wh, bh, y.p, st.p);
    const double us = median_us([&] { (void)upd->run(nullptr, {}, ua); }, quick ? 2 : 5, quick ? 10 : 40);
    BENCH_CUDA_OK(cudaGetLastError());
    recs.push_back({c, "update", upd->sku().name(), us, 2.0 * (rows + rows * S) * 2, ok});
    failures += !ok;
  }
  print_bandwidth("conv1d", recs, ceiling, [](const ConvCase& c) { return c.name; });
  if (!json_path.empty() &&
      !write_bandwidth_json(json_path, ceiling, "", recs, [](const ConvCase& c) {
        return strf("\"op\": \"causal_conv1d\", \"case\": \"%s\", \"layout\": \"%s\", \"B\": %lld, \"L\": %lld, \"C\": %lld, "
                    "\"W\": %d, \"shape\": [%lld, %lld, %lld]",
                    c.name.c_str(), std::string(enum_name(c.layout)).c_str(), (long long)c.B, (long long)c.L,
                    (long long)c.C, c.W, (long long)c.B, (long long)c.L, (long long)c.C);
      }))
    return failures + 1;
  return failures;
}

}  // namespace baracuda::bench
