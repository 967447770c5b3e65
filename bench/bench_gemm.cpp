// GEMM family benchmarks: 8192^3 bf16 and the Llama-3-8B projections at 32768 tokens (forward,
// dgrad, wgrad), each beside cuBLASLt's best algorithm (top-16 heuristic candidates timed
// directly, the ceiling), plus fused vs separate epilogue and the host overhead of run().
// Writes JSON records that bench/torch_gemm_side_by_side.py completes with PyTorch's times.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "baracuda/core/half_bits.hpp"
#include "timing.hpp"
#include "baracuda/ops/bilinear.hpp"
#include "baracuda/ops/gemm.hpp"

namespace baracuda::bench {

namespace {

// Two functions timed alternately (a, b, a, b, ...) so both see the same clock and power state;
// returns their medians.
template <class F, class G>
std::pair<double, double> paired_median_ms(F&& fa, G&& fb, int warm, int reps) {
  std::vector<double> ta, tb;
  for (int i = 0; i < reps; ++i) {
    ta.push_back(median_ms(fa, i == 0 ? warm : 0, 1));
    tb.push_back(median_ms(fb, i == 0 ? warm : 0, 1));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[reps / 2], tb[reps / 2]};
}


// uniform(-1, 1) bf16 on the device: one random 4M-element slice (an odd length, so rows do not
// repeat in step) uploaded once, then replicated device-to-device
void fill_bf16(void* dev, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t chunk = std::min<int64_t>(n, (int64_t{1} << 22) + 13);
  std::vector<uint16_t> h(static_cast<size_t>(chunk));
  for (auto& v : h) v = float_to_bf16_bits(u(rng));
  BENCH_CUDA_OK(cudaMemcpy(dev, h.data(), chunk * 2, cudaMemcpyHostToDevice));
  for (int64_t o = chunk; o < n; o += chunk)
    BENCH_CUDA_OK(cudaMemcpy(static_cast<uint16_t*>(dev) + o, dev, std::min(chunk, n - o) * 2, cudaMemcpyDeviceToDevice));
}

struct GemmRecord {
  std::string op, direction, variant, sku;
  int64_t m, n, k;
  double ours_ms, lt_best_ms, ours_tflops, lt_best_tflops;
  bool verified;
  int algos_timed;
  double heuristic_ms = -1;  // autotuned records: the heuristic plan timed alternately with the tuned one
  double plain_ms = -1;      // epilogue records: the plain GEMM of the same problem timed alternately
};

// Best time over cuBLASLt's top-16 heuristic algorithms for D[M,N] = A[M,K]·op(B), row-major,
// same layouts our plan sees (computed as Dᵀ = op(B)ᵀ·Aᵀ in column-major).
// b_kn: B stored [K, N] row-major, else B stored [N, K] row-major (nn.Linear weight).
// a_km: A stored [K, M] row-major (a transposed view), else [M, K].
double lt_best_ms(cublasLtHandle_t h, int64_t M, int64_t N, int64_t K, bool a_km, bool b_kn, const void* A,
                  const void* B, void* D, void* ws, size_t ws_bytes, int* timed) {
  cublasLtMatmulDesc_t op;
  cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  // Lt A = our B (as [N, K] col-major view): stored [K, N] row-major == col-major [N, K] -> N op
  const int32_t ta = b_kn ? CUBLAS_OP_N : CUBLAS_OP_T, tb = a_km ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  cublasLtMatrixLayout_t la, lb, ld;
  if (b_kn) cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, N, K, N);
  else cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, K, N, K);
  if (a_km) cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, M, K, M);
  else cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, K, M, K);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, N, M, N);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  const uint64_t wsb = ws_bytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
  cublasLtMatmulHeuristicResult_t res[16];
  int got = 0;
  cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 16, res, &got);
  const float alpha = 1.f, beta = 0.f;
  double best = 1e30;
  *timed = 0;
  for (int i = 0; i < got; ++i) {
    if (res[i].workspaceSize > ws_bytes) continue;
    bool ok = true;
    const double ms = median_ms(
        [&] {
          if (cublasLtMatmul(h, op, &alpha, B, la, A, lb, &beta, D, ld, D, ld, &res[i].algo, ws, res[i].workspaceSize, nullptr) !=
              CUBLAS_STATUS_SUCCESS)
            ok = false;
        },
        2, 7);
    if (ok) best = std::min(best, ms), ++*timed;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  return best;
}

// y[i, j] for sampled (i, j) against a double dot product of the bf16 inputs (forward only):
// x [M, K] row-major, w [N, K] row-major.
bool verify_linear_sampled(const void* x, const void* w, const void* y, int64_t M, int64_t N, int64_t K) {
  std::mt19937_64 rng(123);
  std::vector<uint16_t> xr(K), wr(K);
  for (int s = 0; s < 24; ++s) {
    const int64_t i = static_cast<int64_t>(rng() % M), j = static_cast<int64_t>(rng() % N);
    uint16_t yv;
    BENCH_CUDA_OK(cudaMemcpy(xr.data(), static_cast<const uint16_t*>(x) + i * K, K * 2, cudaMemcpyDeviceToHost));
    BENCH_CUDA_OK(cudaMemcpy(wr.data(), static_cast<const uint16_t*>(w) + j * K, K * 2, cudaMemcpyDeviceToHost));
    BENCH_CUDA_OK(cudaMemcpy(&yv, static_cast<const uint16_t*>(y) + i * N + j, 2, cudaMemcpyDeviceToHost));
    double ref = 0, abs = 0;
    for (int64_t k = 0; k < K; ++k) {
      const double p = static_cast<double>(bf16_bits_to_float(xr[k])) * bf16_bits_to_float(wr[k]);
      ref += p, abs += std::fabs(p);
    }
    const double got = bf16_bits_to_float(yv);
    if (std::fabs(got - ref) > 2 * 7.8125e-3 * std::fabs(ref) + 2.0 * K * 1.2e-7 * abs) {
      std::printf("  VERIFY FAIL y[%lld, %lld] = %g, reference %g\n", (long long)i, (long long)j, got, ref);
      return false;
    }
  }
  return true;
}

// Selects desc under pref and times run(); 0 on failure (printed). With pref.autotune the plan is
// timed alternately with the heuristic plan of the same descriptor, whose time goes to *baseline.
// pair (optional): a plan timed alternately with this one (its time in *paired_ms), e.g. the
// plain GEMM under an epilogue, so clock drift between rows does not enter their difference.
double time_gemm(const std::string& label, const GemmDescriptor& desc, const PlanPreference& pref, const GemmArgs& args,
                 int reps, std::string* sku, int* failures, double* baseline = nullptr,
                 const std::pair<const GemmPlan*, const GemmArgs*>& pair = {}, double* paired_ms = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  auto plan = GemmPlan::select(desc, pref);
  const double select_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto heur = GemmPlan::select(desc);
  if (!plan || !heur) {
    std::printf("%s: select failed: %s\n", label.c_str(), (plan ? heur.status() : plan.status()).to_string().c_str());
    ++*failures;
    return 0;
  }
  if (pref.autotune) std::printf("%s: autotuned select() took %.1f ms\n", label.c_str(), select_ms);
  const size_t pair_ws = pair.first ? pair.first->workspace_size() : 0;
  DeviceBuffer ws(std::max({plan->workspace_size(), heur->workspace_size(), pair_ws}));
  Status st, st2;
  double ms = 0;
  auto run_plan = [&] { st = plan->run(nullptr, {ws.p, plan->workspace_size()}, args); };
  if (pair.first && paired_ms) {
    auto pr = paired_median_ms(run_plan, [&] { st2 = pair.first->run(nullptr, {ws.p, pair_ws}, *pair.second); }, 2, reps);
    ms = pr.first, *paired_ms = pr.second;
  } else if (pref.autotune && baseline) {
    auto pr = paired_median_ms(run_plan, [&] { st2 = heur->run(nullptr, {ws.p, heur->workspace_size()}, args); }, 2, reps);
    ms = pr.first, *baseline = pr.second;
  } else {
    ms = median_ms(run_plan, 2, reps);
  }
  if (!st.ok() || !st2.ok()) {
    std::printf("%s: run failed: %s\n", label.c_str(), (st.ok() ? st2 : st).to_string().c_str());
    ++*failures;
    return 0;
  }
  *sku = plan->sku().name();
  return ms;
}

}  // namespace

int run_gemm_family(const std::string& json_path, bool quick, const std::string& filter) {
  struct Shape {
    const char* name;
    int64_t t, in, out;
  };
  const int64_t T = quick ? 8192 : 32768;
  std::vector<Shape> shapes = {{"mm_8192", 8192, 8192, 8192},   {"llama3_qkv", T, 4096, 6144},
                               {"llama3_o", T, 4096, 4096},      {"llama3_gate_up", T, 4096, 28672},
                               {"llama3_down", T, 14336, 4096},  {"llama3_lm_head", T, 4096, 128256}};
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress survives a timeout
  cublasLtHandle_t h;
  if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  const size_t ws_bytes = size_t{32} << 20;
  DeviceBuffer ws_lt(ws_bytes);
  std::vector<GemmRecord> recs;
  int failures = 0;
  for (const Shape& s : shapes) {
    for (const char* dir : {"fwd", "dgrad", "wgrad"}) {
      if (std::string(s.name) == "mm_8192" && std::string(dir) != "fwd") continue;
      const std::string label = std::string(s.name) + " " + dir;
      if (filter_skips(filter, label)) continue;
      // fwd: Y[T,out] = X[T,in]·Wᵀ;  dgrad: dX[T,in] = dY[T,out]·W[out,in];  wgrad: dW[out,in] = dYᵀ·X
      int64_t M, N, K;
      const std::string d(dir);
      if (d == "fwd") M = s.t, N = s.out, K = s.in;
      else if (d == "dgrad") M = s.t, N = s.in, K = s.out;
      else M = s.out, N = s.in, K = s.t;
      DeviceBuffer x(size_t(s.t) * s.in * 2), w(size_t(s.out) * s.in * 2), dy(size_t(s.t) * s.out * 2), o(size_t(M) * N * 2);
      fill_bf16(x.p, s.t * s.in, 1), fill_bf16(w.p, s.out * s.in, 2), fill_bf16(dy.p, s.t * s.out, 3);
      GemmDescriptor desc;
      GemmArgs args;
      const TensorLayout X = TensorLayout::make(DType::bf16, std::vector<int64_t>{s.t, s.in});
      const TensorLayout W = TensorLayout::make(DType::bf16, std::vector<int64_t>{s.out, s.in});
      const TensorLayout DY = TensorLayout::make(DType::bf16, std::vector<int64_t>{s.t, s.out});
      const TensorLayout OUT = TensorLayout::make(DType::bf16, std::vector<int64_t>{M, N});
      const void *pa, *pb;
      bool a_km = false, b_kn = true;
      if (d == "fwd") {
        desc = GemmDescriptor::linear(X, W, nullptr, OUT), pa = x.p, pb = w.p, b_kn = false;
        static_cast<TensorLayout&>(args.a) = X, static_cast<TensorLayout&>(args.b) = W;
      } else if (d == "dgrad") {
        desc = GemmDescriptor::mm(DY, W, OUT), pa = dy.p, pb = w.p;
        static_cast<TensorLayout&>(args.a) = DY, static_cast<TensorLayout&>(args.b) = W;
      } else {
        TensorLayout DYT = DY;  // dYᵀ as a transposed view [out, T]
        std::swap(DYT.shape[0], DYT.shape[1]), std::swap(DYT.stride[0], DYT.stride[1]);
        desc = GemmDescriptor::mm(DYT, X, OUT), pa = dy.p, pb = x.p, a_km = true;
        static_cast<TensorLayout&>(args.a) = DYT, static_cast<TensorLayout&>(args.b) = X;
      }
      args.a.data = pa, args.b.data = pb;
      static_cast<TensorLayout&>(args.out) = OUT;
      args.out.data = o.p;
      auto plan = GemmPlan::select(desc);
      if (!plan) {
        std::printf("%s: select failed: %s\n", label.c_str(), plan.status().to_string().c_str());
        ++failures;
        continue;
      }
      DeviceBuffer ws(plan->workspace_size());
      const Workspace wsv{ws.p, plan->workspace_size()};
      Status st;
      const int reps = M * N * K > (int64_t{1} << 42) ? 7 : 15;
      const double ours = median_ms([&] { st = plan->run(nullptr, wsv, args); }, 2, reps);
      if (!st.ok()) {
        std::printf("%s: run failed: %s\n", label.c_str(), st.to_string().c_str());
        ++failures;
        continue;
      }
      const bool ok = d != "fwd" || verify_linear_sampled(x.p, w.p, o.p, M, N, K);
      failures += !ok;
      int timed = 0;
      const double best = lt_best_ms(h, M, N, K, a_km, b_kn, pa, pb, o.p, ws_lt.p, ws_bytes, &timed);
      const double flop = 2.0 * M * N * K;
      GemmRecord r{s.name, d, "plain", plan->sku().name(), M, N, K, ours, best, flop / ours / 1e9, flop / best / 1e9, ok, timed};
      std::printf("%-16s %-5s M=%-6lld N=%-6lld K=%-6lld ours %9.3f ms %7.1f TFLOP/s | lt best-of-%d %9.3f ms %7.1f TFLOP/s "
                  "(%.1f%%) %s %s\n",
                  s.name, dir, (long long)M, (long long)N, (long long)K, ours, r.ours_tflops, timed, best, r.lt_best_tflops,
                  100.0 * best / ours, ok ? "" : "VERIFY-FAIL", r.sku.c_str());
      recs.push_back(r);

      // paired: time the plain GEMM alternately with this variant (the epilogue's own cost)
      auto variant = [&](const char* v, const GemmDescriptor& dv, const PlanPreference& pv, const GemmArgs& av,
                         bool paired = false) {
        std::string sku;
        double base = 0, plain = -1;
        const double ms = time_gemm(label + " " + v, dv, pv, av, reps, &sku, &failures, &base,
                                    paired ? std::make_pair(&*plan, &args) : std::pair<const GemmPlan*, const GemmArgs*>{}, &plain);
        if (ms <= 0) return;
        std::printf("%-16s %-5s %-26s ours %9.3f ms %7.1f TFLOP/s %s", s.name, dir, v, ms, flop / ms / 1e9, sku.c_str());
        if (base > 0) std::printf("  (heuristic plan, timed alternately: %.3f ms, tuned/heuristic %.3f)", base, ms / base);
        if (plain > 0) std::printf("  (plain GEMM, timed alternately: %.3f ms; epilogue +%.3f ms)", plain, ms - plain);
        std::printf("\n");
        GemmRecord rec{s.name, d, v, sku, M, N, K, ms, best, flop / ms / 1e9, flop / best / 1e9, true, timed, base};
        rec.plain_ms = plain;
        recs.push_back(rec);
      };
      PlanPreference tuned;
      tuned.autotune = true;
      // timed selection (top-8 candidates) on the plain problem
      variant("autotuned", desc, tuned, args);

      // forward epilogue (bias + gelu_tanh): fused, separate, and the timed choice between them
      if (d == "fwd" && (std::string(s.name) == "llama3_gate_up" || std::string(s.name) == "llama3_o")) {
        DeviceBuffer bias(size_t(N) * 2);
        fill_bf16(bias.p, N, 4);
        const TensorLayout BL = TensorLayout::make(DType::bf16, std::vector<int64_t>{N});
        GemmArgs ae = args;
        static_cast<TensorLayout&>(ae.bias) = BL;
        ae.bias.data = bias.p;
        GemmDescriptor de = GemmDescriptor::linear(X, W, &BL, OUT);
        de.activation = GemmActivation::kGeluTanh;
        variant("bias_gelu_tanh_fused", de, {}, ae, true);
        variant("bias_gelu_tanh_autotuned", de, tuned, ae);
        de.epilogue_impl = GemmEpilogueImpl::kSeparate;
        variant("bias_gelu_tanh_separate", de, {}, ae);
      }
      // backward epilogue on the dgrad GEMM of the next layer: dH = (dY·W) ⊙ gelu'(Z), dbias = Σ_T dH
      if (d == "dgrad" && (std::string(s.name) == "llama3_down" || std::string(s.name) == "llama3_o")) {
        DeviceBuffer aux(size_t(M) * N * 2), bgrad(size_t(N) * 2);
        fill_bf16(aux.p, M * N, 5);
        GemmArgs ag = args;
        static_cast<TensorLayout&>(ag.aux) = OUT;
        ag.aux.data = aux.p;
        static_cast<TensorLayout&>(ag.bias_grad) = TensorLayout::make(DType::bf16, std::vector<int64_t>{N});
        ag.bias_grad.data = bgrad.p;
        GemmDescriptor dg = desc;
        dg.grad_activation = GemmActivation::kGeluTanh;
        dg.has_bias_grad = true;
        variant("dgelu_bgrad_default", dg, {}, ag, true);  // kAuto without timing: the separate form
        variant("dgelu_bgrad_autotuned", dg, tuned, ag);
        dg.epilogue_impl = GemmEpilogueImpl::kFused;
        variant("dgelu_bgrad_fused", dg, {}, ag);
      }
    }
  }
  // nn.functional.bilinear: x1 [B, I], x2 [B, J], w [O, I, J], bias [O]; forward and all gradients
  if (!filter_skips(filter, "bilinear")) {
    const int64_t B = quick ? 1024 : 4096, I = 256, J = 256, O = 256;
    DeviceBuffer x1(size_t(B) * I * 2), x2(size_t(B) * J * 2), w(size_t(O) * I * J * 2), bias(size_t(O) * 2), y(size_t(B) * O * 2),
        dy(size_t(B) * O * 2), dx1(size_t(B) * I * 2), dx2(size_t(B) * J * 2), dw(size_t(O) * I * J * 2), db(size_t(O) * 2);
    fill_bf16(x1.p, B * I, 6), fill_bf16(x2.p, B * J, 7), fill_bf16(w.p, O * I * J, 8), fill_bf16(bias.p, O, 9);
    fill_bf16(dy.p, B * O, 10);
    auto lay = [](std::vector<int64_t> s) { return TensorLayout::make(DType::bf16, s); };
    BilinearDescriptor bd;
    bd.x1 = lay({B, I}), bd.x2 = lay({B, J}), bd.weight = lay({O, I, J}), bd.out = lay({B, O}), bd.bias = lay({O});
    bd.has_bias = true;
    auto fp = BilinearPlan::select(bd);
    auto bp = BilinearBackwardPlan::select(bd);
    if (!fp || !bp) {
      std::printf("bilinear select failed\n");
      ++failures;
    } else {
      DeviceBuffer wf(fp->workspace_size()), wb(bp->workspace_size());
      BilinearArgs fa;
      static_cast<TensorLayout&>(fa.x1) = bd.x1, static_cast<TensorLayout&>(fa.x2) = bd.x2;
      static_cast<TensorLayout&>(fa.weight) = bd.weight, static_cast<TensorLayout&>(fa.bias) = bd.bias;
      static_cast<TensorLayout&>(fa.out) = bd.out;
      fa.x1.data = x1.p, fa.x2.data = x2.p, fa.weight.data = w.p, fa.bias.data = bias.p, fa.out.data = y.p;
      BilinearBackwardArgs ba;
      static_cast<TensorLayout&>(ba.x1) = bd.x1, static_cast<TensorLayout&>(ba.x2) = bd.x2;
      static_cast<TensorLayout&>(ba.weight) = bd.weight, static_cast<TensorLayout&>(ba.d_out) = bd.out;
      static_cast<TensorLayout&>(ba.dx1) = bd.x1, static_cast<TensorLayout&>(ba.dx2) = bd.x2;
      static_cast<TensorLayout&>(ba.dweight) = bd.weight, static_cast<TensorLayout&>(ba.dbias) = bd.bias;
      ba.x1.data = x1.p, ba.x2.data = x2.p, ba.weight.data = w.p, ba.d_out.data = dy.p;
      ba.dx1.data = dx1.p, ba.dx2.data = dx2.p, ba.dweight.data = dw.p, ba.dbias.data = db.p;
      Status s1, s2;
      const double f_ms = median_ms([&] { s1 = fp->run(nullptr, {wf.p, fp->workspace_size()}, fa); }, 2, 15);
      const double b_ms = median_ms([&] { s2 = bp->run(nullptr, {wb.p, bp->workspace_size()}, ba); }, 2, 15);
      if (!s1.ok() || !s2.ok()) {
        std::printf("bilinear run failed: %s %s\n", s1.to_string().c_str(), s2.to_string().c_str());
        ++failures;
      } else {
        // the GEMMs' useful flops: fwd U (2·B·O·I·J) + y (2·B·O·J); bwd recomputes U and T, and G·dW
        const double ff = 2.0 * B * O * I * J + 2.0 * B * O * J;
        const double bf = 2.0 * B * O * I * J * 3 + 2.0 * B * O * (I + 2 * J);
        std::printf("bilinear fwd B=%lld I=J=O=256 %9.3f ms %7.1f TFLOP/s %s\n", (long long)B, f_ms, ff / f_ms / 1e9,
                    fp->sku().name().c_str());
        std::printf("bilinear bwd                 %9.3f ms %7.1f TFLOP/s %s\n", b_ms, bf / b_ms / 1e9, bp->sku().name().c_str());
        recs.push_back({"bilinear", "fwd", "bias", fp->sku().name(), B, O, I * J, f_ms, -1, ff / f_ms / 1e9, -1, true, 0});
        recs.push_back({"bilinear", "bwd", "bias", bp->sku().name(), B, O, I * J, b_ms, -1, bf / b_ms / 1e9, -1, true, 0});
      }
    }
  }

  // host overhead of run(): enqueue only, small problem
  double overhead_us = 0;
  {
    DeviceBuffer a(64 * 64 * 2), b(64 * 64 * 2), c(64 * 64 * 2);
    const TensorLayout L = TensorLayout::make(DType::bf16, std::vector<int64_t>{64, 64});
    auto plan = *GemmPlan::select(GemmDescriptor::mm(L, L, L));
    DeviceBuffer ws(plan.workspace_size());
    GemmArgs args;
    static_cast<TensorLayout&>(args.a) = L, static_cast<TensorLayout&>(args.b) = L, static_cast<TensorLayout&>(args.out) = L;
    args.a.data = a.p, args.b.data = b.p, args.out.data = c.p;
    for (int i = 0; i < 100; ++i) (void)plan.run(nullptr, {ws.p, plan.workspace_size()}, args);
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    const int n = 2000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) (void)plan.run(nullptr, {ws.p, plan.workspace_size()}, args);
    const auto t1 = std::chrono::steady_clock::now();
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    overhead_us = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
    std::printf("host overhead of GemmPlan::run (checks + cublasLtMatmul enqueue, 64^3 bf16): %.2f us/call\n", overhead_us);
    const auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) (void)GemmPlan::select(GemmDescriptor::mm(L, L, L));
    const auto t3 = std::chrono::steady_clock::now();
    std::printf("GemmPlan::select of a cached descriptor: %.2f us/call\n",
                std::chrono::duration<double, std::micro>(t3 - t2).count() / n);
  }
  cublasLtDestroy(h);
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) return failures + 1;
    std::fprintf(f, "{\"host_overhead_us\": %.3f, \"records\": [\n", overhead_us);
    for (size_t i = 0; i < recs.size(); ++i) {
      const GemmRecord& r = recs[i];
      std::fprintf(f,
                   "  {\"op\": \"%s\", \"direction\": \"%s\", \"dtype\": \"bf16\", \"variant\": \"%s\", \"sku\": \"%s\", "
                   "\"m\": %lld, \"n\": %lld, \"k\": %lld, \"ours_ms\": %.4f, \"lt_best_ms\": %.4f, \"ours_tflops\": %.2f, "
                   "\"lt_best_tflops\": %.2f, \"lt_algos_timed\": %d, \"heuristic_ms\": %.4f, \"plain_ms\": %.4f, \"verified\": %s}%s\n",
                   r.op.c_str(), r.direction.c_str(), r.variant.c_str(), r.sku.c_str(), (long long)r.m, (long long)r.n,
                   (long long)r.k, r.ours_ms, r.lt_best_ms, r.ours_tflops, r.lt_best_tflops, r.algos_timed, r.heuristic_ms, r.plain_ms,
                   r.verified ? "true" : "false", i + 1 < recs.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return failures;
}

}  // namespace baracuda::bench
