// RoPE family benchmark: the shapes (Llama-3-8B q [32768, 32, 128] + k [32768, 8, 128],
// 70B q [32768, 64, 128]) in bf16 and f32, plus partial rotary, interleaved pairing, a cos/sin
// cache and in place; forward and backward. Bytes = q and k (and their outputs) once, plus the
// cache rows read. Sampled tokens of every forward are checked against the float64 reference.
// --rope-json FILE writes records for bench/torch_rope_side_by_side.py.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/core/half_bits.hpp"
#include "rope_ref.hpp"
#include "bench_data.hpp"
#include "timing.hpp"

namespace baracuda::bench {

namespace {

struct RopeCase {
  std::string name;
  DType dt;
  int64_t S, Hq, Hk, D, R;
  RopePairing pairing = RopePairing::kHalf;
  bool cache = false, in_place = false;
};

std::vector<RopeCase> rope_cases() {
  std::vector<RopeCase> cs;
  for (DType dt : {DType::bf16, DType::f32}) {
    cs.push_back({"llama8b_qk", dt, 32768, 32, 8, 128, 128});
    cs.push_back({"llama70b_q", dt, 32768, 64, 0, 128, 128});
  }
  cs.push_back({"llama8b_qk_partial64", DType::bf16, 32768, 32, 8, 128, 64});
  cs.push_back({"llama8b_qk_interleaved", DType::bf16, 32768, 32, 8, 128, 128, RopePairing::kInterleaved});
  cs.push_back({"llama8b_qk_cache", DType::bf16, 32768, 32, 8, 128, 128, RopePairing::kHalf, true});
  cs.push_back({"llama8b_qk_inplace", DType::bf16, 32768, 32, 8, 128, 128, RopePairing::kHalf, false, true});
  return cs;
}

RopeDescriptor descriptor_of(const RopeCase& c) {
  RopeDescriptor d;
  d.dtype = c.dt;
  d.layout = RopeLayout::kBSHD;
  d.pairing = c.pairing;
  d.batch = 1;
  d.seq = c.S;
  d.heads_q = c.Hq;
  d.heads_k = c.Hk;
  d.head_dim = c.D;
  d.rotary_dim = c.R;
  d.base = 500000;
  if (c.cache) {
    d.cos_sin_cache = true;
    d.cache_dtype = DType::f32;
    d.cache_rows = c.S;
  }
  return d;
}

// Tokens 0, S/2 and S-1 of each side against the reference (tolerance as the device suite's).
bool verify(const RopeCase& c, const RopeDescriptor& d, const void* const in[2], const void* const out[2],
            const std::vector<float>& cos, const std::vector<float>& sin) {
  const size_t es = dtype_size(c.dt);
  std::vector<double> w;
  double m = 1;
  if (!d.cos_sin_cache) ref::rope_frequencies(d, &w, &m);
  std::vector<double> cd(cos.begin(), cos.end()), sd(sin.begin(), sin.end());
  for (int x = 0; x < (c.Hk > 0 ? 2 : 1); ++x) {
    const int64_t H = x == 0 ? c.Hq : c.Hk, row = H * c.D;
    for (int64_t t : {int64_t{0}, c.S / 2, c.S - 1}) {
      std::vector<uint8_t> hi(static_cast<size_t>(row) * es), ho(hi.size());
      BENCH_CUDA_OK(cudaMemcpy(hi.data(), static_cast<const uint8_t*>(in[x]) + t * row * es, hi.size(), cudaMemcpyDeviceToHost));
      BENCH_CUDA_OK(cudaMemcpy(ho.data(), static_cast<const uint8_t*>(out[x]) + t * row * es, ho.size(), cudaMemcpyDeviceToHost));
      RopeDescriptor one = d;
      one.seq = 1;
      one.position_offset = t;
      std::vector<double> xv(static_cast<size_t>(row)), cos1, sin1;
      for (int64_t j = 0; j < row; ++j) xv[j] = bf16_or_f32_at(c.dt, &hi[j * es]);
      if (d.cos_sin_cache) {  // a one-row cache holding row t
        const int64_t h2 = d.rot_dim() / 2;
        cos1.assign(cd.begin() + t * h2, cd.begin() + (t + 1) * h2);
        sin1.assign(sd.begin() + t * h2, sd.begin() + (t + 1) * h2);
        one.cache_rows = 1;
        one.position_offset = 0;
      }
      const auto want = ref::rope_apply(one, H, xv, ref::rope_positions(one, {}), cos1, sin1, false);
      const double eps = c.dt == DType::f32 ? 8 * 1.19e-7 : 7.81e-3;
      for (int64_t j = 0; j < row; ++j) {
        const double tol = eps * 2 * 2.0 * m + 4 * std::fabs(static_cast<double>(t)) * 2.3e-16 * 4;
        if (!(std::fabs(bf16_or_f32_at(c.dt, &ho[j * es]) - want[j]) <= tol)) {
          std::fprintf(stderr, "rope %s: token %lld element %lld got %g want %g\n", c.name.c_str(), (long long)t,
                       (long long)j, bf16_or_f32_at(c.dt, &ho[j * es]), want[j]);
          return false;
        }
      }
    }
  }
  return true;
}

}  // namespace

// Without a GPU: every case selects for sm_90 in both directions.
bool rope_cases_select() {
  PlanPreference pref;
  pref.target_arch = 90;
  for (const RopeCase& c : rope_cases())
    if (!RopePlan::select(descriptor_of(c), pref).ok() || !RopeBackwardPlan::select(descriptor_of(c), pref).ok()) return false;
  return true;
}

int run_rope_family(const std::string& json_path, bool quick, const std::string& filter) {
  const double ceiling = measure_copy_tbps();
  std::vector<BandwidthRec<RopeCase>> recs;
  int failures = 0;
  for (const RopeCase& c : rope_cases()) {
    if (filter_skips(filter, c.name)) continue;
    const RopeDescriptor d = descriptor_of(c);
    auto fwd = RopePlan::select(d);
    auto bwd = RopeBackwardPlan::select(d);
    if (!fwd.ok() || !bwd.ok()) {
      std::fprintf(stderr, "rope %s: select failed\n", c.name.c_str());
      ++failures;
      continue;
    }
    const size_t es = dtype_size(c.dt);
    const int64_t nq = c.S * c.Hq * c.D, nk = c.S * c.Hk * c.D;
    DeviceBuffer q(nq * es), k(nk * es), qo(nq * es), ko(nk * es);
    fill_uniform(q.p, c.dt, nq, 1);
    if (nk) fill_uniform(k.p, c.dt, nk, 2);
    std::vector<float> cos, sin;
    const int64_t h2 = d.rot_dim() / 2;
    DeviceBuffer cosb(c.cache ? c.S * h2 * 4 : 0), sinb(c.cache ? c.S * h2 * 4 : 0);
    if (c.cache) {
      std::vector<double> w;
      double m;
      RopeDescriptor comp = d;
      comp.cos_sin_cache = false;
      ref::rope_frequencies(comp, &w, &m);
      for (int64_t t = 0; t < c.S; ++t)
        for (int64_t f = 0; f < h2; ++f) {
          cos.push_back(static_cast<float>(std::cos(t * w[f])));
          sin.push_back(static_cast<float>(std::sin(t * w[f])));
        }
      BENCH_CUDA_OK(cudaMemcpy(cosb.p, cos.data(), cos.size() * 4, cudaMemcpyHostToDevice));
      BENCH_CUDA_OK(cudaMemcpy(sinb.p, sin.data(), sin.size() * 4, cudaMemcpyHostToDevice));
    }
    void* outq = c.in_place ? q.p : qo.p;
    void* outk = c.in_place ? k.p : ko.p;
    const TensorRef qr = TensorRef::make(q.p, c.dt, {1, c.S, c.Hq, c.D});
    const TensorRef kr = TensorRef::make(k.p, c.dt, {1, c.S, c.Hk, c.D});
    const TensorMut qm = TensorMut::make(outq, c.dt, {1, c.S, c.Hq, c.D});
    const TensorMut km = TensorMut::make(outk, c.dt, {1, c.S, c.Hk, c.D});
    const TensorRef cr = c.cache ? TensorRef::make(cosb.p, DType::f32, {c.S, h2}) : TensorRef{};
    const TensorRef sr = c.cache ? TensorRef::make(sinb.p, DType::f32, {c.S, h2}) : TensorRef{};
    const TensorRef none{};
    const TensorMut none_m{};
    const RopeArgs fa{qr, qm, nk ? kr : none, nk ? km : none_m, {}, cr, sr};
    const RopeBackwardArgs ba{qr, qm, nk ? kr : none, nk ? km : none_m, {}, cr, sr};
    // verify the forward once on fresh inputs (out of place, or before the timed in-place runs)
    bool ok = fwd->run(nullptr, {}, fa).ok();
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    if (!c.in_place) {
      const void* in[2] = {q.p, k.p};
      const void* out[2] = {outq, outk};
      ok = ok && verify(c, d, in, out, cos, sin);
    }
    const int warm = quick ? 2 : 5, reps = quick ? 10 : 50;
    const double us_f = median_us([&] { (void)fwd->run(nullptr, {}, fa); }, warm, reps);
    const double us_b = median_us([&] { (void)bwd->run(nullptr, {}, ba); }, warm, reps);
    BENCH_CUDA_OK(cudaGetLastError());
    // bytes: read and write every element of q and k (in place with partial rotary would skip
    // the pass-through part; all in-place cases here rotate the whole row), plus cache rows
    const double bytes = 2.0 * static_cast<double>((nq + nk) * es) + (c.cache ? 2.0 * c.S * h2 * 4 : 0.0);
    recs.push_back({c, "fwd", fwd->sku().name(), us_f, bytes, ok});
    recs.push_back({c, "bwd", bwd->sku().name(), us_b, bytes, ok});
    failures += !ok;
  }
  print_bandwidth("rope", recs, ceiling, [](const RopeCase& c) { return c.name; });
  // host cost of run() (checks + parameter block + launch), enqueue only, on a tiny problem
  double overhead = 0;
  {
    RopeCase t{"tiny", DType::bf16, 4, 2, 1, 64, 64};
    const RopeDescriptor d = descriptor_of(t);
    auto plan = RopePlan::select(d);
    DeviceBuffer q(4 * 2 * 64 * 2), k(4 * 64 * 2);
    const RopeArgs a{TensorRef::make(q.p, DType::bf16, {1, 4, 2, 64}), TensorMut::make(q.p, DType::bf16, {1, 4, 2, 64}),
                     TensorRef::make(k.p, DType::bf16, {1, 4, 1, 64}), TensorMut::make(k.p, DType::bf16, {1, 4, 1, 64}),
                     {}, {}, {}};
    for (int i = 0; i < 100; ++i) (void)plan->run(nullptr, {}, a);
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    const int n = 2000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) (void)plan->run(nullptr, {}, a);
    const auto t1 = std::chrono::steady_clock::now();
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    overhead = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
    std::printf("host overhead of RopePlan::run (checks + launch, enqueue only): %.2f us/call\n", overhead);
  }
  if (!json_path.empty() &&
      !write_bandwidth_json(json_path, ceiling, strf("\"host_overhead_us\": %.3f, ", overhead), recs, [](const RopeCase& c) {
        return strf("\"op\": \"rope\", \"case\": \"%s\", \"shape\": %s, \"S\": %lld, \"Hq\": %lld, \"Hk\": %lld, \"D\": %lld, "
                    "\"R\": %lld, \"pairing\": \"%s\", \"cache\": %s, \"in_place\": %s",
                    c.name.c_str(), shape_json({c.S, c.Hq, c.D}).c_str(), (long long)c.S, (long long)c.Hq, (long long)c.Hk,
                    (long long)c.D, (long long)c.R, std::string(enum_name(c.pairing)).c_str(), c.cache ? "true" : "false",
                    c.in_place ? "true" : "false");
      }))
    return failures + 1;
  return failures;
}

}  // namespace baracuda::bench
