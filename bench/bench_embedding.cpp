// Embedding benchmark (the shapes):
//   embedding     table [128256, 4096] bf16 and f32, ids [8, 4096] (N = 32768) uniform, Zipf(1.1)
//                 and all-equal; forward, backward sort (deterministic) and scatter (atomic).
//   embedding_bag table [10M, 128] f32 and bf16, 65536 bags of 32 (offsets form), sum mode,
//                 uniform ids; forward, backward sort and scatter.
// Bytes (the ideal an implementation must move): forward gather N·D·es read + N·D·es (or B·D·es)
// written + ids; backward V·D·es written (every dweight row) + N·D·es (or B·D·es) of dout read +
// ids. Sampled output rows and dweight rows (the hottest one included) are checked against
// float64 sums. --emb-json FILE writes records for bench/torch_embedding_side_by_side.py.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "bench_ceilings.hpp"
#include "bench_data.hpp"
#include "timing.hpp"

namespace baracuda::bench {

namespace {

struct EmbCase {
  std::string name, dist;
  bool bag;
  DType dt;
  int64_t V, D, N, B;  // B: bags (bag form), N positions
  double row_read_tbps = 0;  // measured: N random rows of this table read (bench_ceilings.cu)
};

std::vector<EmbCase> emb_cases() {
  std::vector<EmbCase> cs;
  for (DType dt : {DType::bf16, DType::f32})
    for (const char* dist : {"uniform", "zipf1.1", "equal"})
      cs.push_back({std::string("emb_") + dist, dist, false, dt, 128256, 4096, 8 * 4096, 0});
  for (DType dt : {DType::f32, DType::bf16}) cs.push_back({"bag_sum_32", "uniform", true, dt, 10000000, 128, 65536 * 32, 65536});
  return cs;
}

// ids over [0, V): uniform, Zipf(s) by rank (row k − 1 has weight 1/k^s), or all equal (row 7).
std::vector<int64_t> make_ids(const std::string& dist, int64_t n, int64_t V, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  if (dist == "equal") {
    std::fill(ids.begin(), ids.end(), 7);
  } else if (dist == "uniform") {
    for (auto& e : ids) e = static_cast<int64_t>(rng() % static_cast<uint64_t>(V));
  } else {
    std::vector<double> cdf(static_cast<size_t>(V));
    double acc = 0;
    for (int64_t k = 0; k < V; ++k) cdf[static_cast<size_t>(k)] = acc += std::pow(static_cast<double>(k + 1), -1.1);
    std::uniform_real_distribution<double> u(0, acc);
    for (auto& e : ids) e = std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin();
  }
  return ids;
}

std::vector<uint8_t> download(const void* dev, size_t bytes, size_t offset = 0) {
  std::vector<uint8_t> h(bytes);
  BENCH_CUDA_OK(cudaMemcpy(h.data(), static_cast<const char*>(dev) + offset, bytes, cudaMemcpyDeviceToHost));
  return h;
}

// dweight rows: the hottest id, two more used ones and an untouched one, against float64 sums of
// the gradient rows (g_of(p) = dout row of position p).
bool verify_dweight(const EmbCase& c, const std::vector<int64_t>& ids, const std::vector<uint8_t>& gh, const void* dw,
                    int64_t (*row_of)(const EmbCase&, int64_t)) {
  const size_t es = dtype_size(c.dt);
  std::vector<int64_t> cnt(static_cast<size_t>(c.V), 0);
  for (int64_t r : ids) ++cnt[static_cast<size_t>(r)];
  const int64_t hot = std::max_element(cnt.begin(), cnt.end()) - cnt.begin();
  int64_t cold = 0;
  while (cold < c.V && cnt[static_cast<size_t>(cold)] != 0) ++cold;
  const int64_t rows[4] = {hot, ids[ids.size() / 2], ids.back(), cold < c.V ? cold : hot};
  const double eps = c.dt == DType::f32 ? 1e-5 : 1e-2;
  for (int64_t r : rows) {
    const auto got = download(dw, static_cast<size_t>(c.D) * es, static_cast<size_t>(r * c.D) * es);
    for (int64_t d = 0; d < c.D; d += 13) {
      double want = 0, mag = 0;
      for (size_t p = 0; p < ids.size(); ++p)
        if (ids[p] == r) {
          const double g = bf16_or_f32_at(c.dt, gh.data() + (row_of(c, static_cast<int64_t>(p)) * c.D + d) * es);
          want += g, mag += std::fabs(g);
        }
      const double v = bf16_or_f32_at(c.dt, got.data() + d * es);
      if (std::fabs(v - want) > eps * std::fabs(want) + 1e-5 * mag + 1e-30) {
        std::fprintf(stderr, "embedding %s: dweight[%lld, %lld] %g want %g\n", c.name.c_str(), (long long)r, (long long)d, v, want);
        return false;
      }
    }
  }
  return true;
}

int64_t pos_row(const EmbCase&, int64_t p) { return p; }
int64_t bag_row(const EmbCase&, int64_t p) { return p / 32; }

}  // namespace

bool emb_cases_select() {
  PlanPreference pref;
  pref.target_arch = 90;
  for (const EmbCase& c : emb_cases()) {
    if (c.bag) {
      EmbeddingBagDescriptor d;
      d.dtype = c.dt, d.num_embeddings = c.V, d.embedding_dim = c.D, d.num_bags = c.B, d.num_indices = c.N;
      if (!EmbeddingBagPlan::select(d, pref).ok() || !EmbeddingBagBackwardPlan::select(d, pref).ok()) return false;
    } else {
      EmbeddingDescriptor d;
      d.dtype = c.dt, d.num_embeddings = c.V, d.embedding_dim = c.D, d.num_indices = c.N;
      if (!EmbeddingPlan::select(d, pref).ok() || !EmbeddingBackwardPlan::select(d, pref).ok()) return false;
    }
  }
  return true;
}

int run_embedding_family(const std::string& json_path, bool quick, const std::string& filter) {
  const double ceiling = measure_copy_tbps();
  std::vector<BandwidthRec<EmbCase>> recs;
  int failures = 0;
  for (EmbCase c : emb_cases()) {
    const std::string tag = c.name + "_" + std::string(dtype_name(c.dt));
    if (filter_skips(filter, tag)) continue;
    const size_t es = dtype_size(c.dt);
    const int64_t rows_out = c.bag ? c.B : c.N;
    const std::vector<int64_t> ids = make_ids(c.dist, c.N, c.V, 11);
    DeviceBuffer w(static_cast<size_t>(c.V * c.D) * es), dw(static_cast<size_t>(c.V * c.D) * es);
    DeviceBuffer out(static_cast<size_t>(rows_out * c.D) * es), g(static_cast<size_t>(rows_out * c.D) * es);
    DeviceBuffer idx(static_cast<size_t>(c.N) * 8), off(static_cast<size_t>(c.B + 1) * 8);
    BENCH_CUDA_OK(cudaMemcpy(idx.p, ids.data(), ids.size() * 8, cudaMemcpyHostToDevice));
    std::vector<int64_t> offs(static_cast<size_t>(c.B));
    for (int64_t b = 0; b < c.B; ++b) offs[static_cast<size_t>(b)] = b * 32;
    if (c.bag) BENCH_CUDA_OK(cudaMemcpy(off.p, offs.data(), offs.size() * 8, cudaMemcpyHostToDevice));
    const auto wh = fill_uniform(w.p, c.dt, c.V * c.D, 1, -1, 1);
    c.row_read_tbps = measure_random_row_read_tbps(w.p, c.V, static_cast<int>(c.D * es), c.N);
    std::printf("embedding %s: %lld random %lld-byte rows of the table read at %.3f TB/s (%.1f%% of copy)\n", tag.c_str(),
                (long long)c.N, (long long)(c.D * es), c.row_read_tbps, 100 * c.row_read_tbps / ceiling);
    const auto gh = fill_uniform(g.p, c.dt, rows_out * c.D, 2, -1, 1);
    const TensorRef wref = TensorRef::make(w.p, c.dt, {c.V, c.D}), gref = TensorRef::make(g.p, c.dt, {rows_out, c.D});
    const TensorMut oref = TensorMut::make(out.p, c.dt, {rows_out, c.D}), dwref = TensorMut::make(dw.p, c.dt, {c.V, c.D});
    const TensorRef iref = TensorRef::make(idx.p, DType::i64, {c.N}), offref = TensorRef::make(off.p, DType::i64, {c.B});
    const int warm = quick ? 2 : 5, reps = quick ? 10 : 30;
    const double ids_bytes = 8.0 * c.N;
    // forward
    std::function<Status()> fwd_run;
    std::string fwd_sku;
    std::optional<EmbeddingPlan> ef;
    std::optional<EmbeddingBagPlan> bf;
    EmbeddingBagDescriptor bd;
    bd.dtype = c.dt, bd.num_embeddings = c.V, bd.embedding_dim = c.D, bd.num_bags = c.B, bd.num_indices = c.N;
    EmbeddingDescriptor ed;
    ed.dtype = c.dt, ed.num_embeddings = c.V, ed.embedding_dim = c.D, ed.num_indices = c.N;
    if (c.bag) {
      bf = *EmbeddingBagPlan::select(bd);
      fwd_run = [&] { return bf->run(nullptr, {}, {wref, iref, offref, {}, oref, {}, {}}); };
      fwd_sku = bf->sku().name();
    } else {
      ef = *EmbeddingPlan::select(ed);
      fwd_run = [&] { return ef->run(nullptr, {}, {wref, iref, oref, {}}); };
      fwd_sku = ef->sku().name();
    }
    bool ok = fwd_run().ok();
    BENCH_CUDA_OK(cudaDeviceSynchronize());
    // forward check: rows 0, middle, last (bag: float64 sum of 32 rows)
    for (int64_t r : {int64_t{0}, rows_out / 2, rows_out - 1}) {
      const auto got = download(out.p, static_cast<size_t>(c.D) * es, static_cast<size_t>(r * c.D) * es);
      for (int64_t d = 0; d < c.D && ok; ++d) {
        double want = 0;
        const int64_t p0 = c.bag ? r * 32 : r, p1 = c.bag ? p0 + 32 : r + 1;
        for (int64_t p = p0; p < p1; ++p) want += bf16_or_f32_at(c.dt, wh.data() + (ids[static_cast<size_t>(p)] * c.D + d) * es);
        const double v = bf16_or_f32_at(c.dt, got.data() + d * es);
        if (std::fabs(v - want) > (c.dt == DType::f32 ? 1e-5 : 1e-2) * (1 + std::fabs(want))) {
          std::fprintf(stderr, "embedding %s: out[%lld, %lld] %g want %g\n", tag.c_str(), (long long)r, (long long)d, v, want);
          ok = false;
        }
      }
    }
    const double us_f = median_us([&] { (void)fwd_run(); }, warm, reps);
    recs.push_back({c, "fwd", fwd_sku, us_f, 2.0 * rows_out * c.D * es + (c.bag ? (c.N - c.B) * c.D * es : 0) + ids_bytes, ok});
    failures += !ok;
    // backward, both forms
    for (bool det : {true, false}) {
      PlanPreference pref;
      pref.determinism = det ? Determinism::kRunToRun : Determinism::kAny;
      // the atomic form asked for by name: kAuto sorts from kSortFromIndices ids (the bag case)
      bd.backward_algo = ed.backward_algo = det ? EmbeddingBackwardAlgo::kAuto : EmbeddingBackwardAlgo::kScatter;
      std::function<Status()> bwd_run;
      std::string sku;
      size_t wsb = 0;
      std::optional<EmbeddingBackwardPlan> eb;
      std::optional<EmbeddingBagBackwardPlan> bb;
      if (c.bag) {
        bb = *EmbeddingBagBackwardPlan::select(bd, pref);
        wsb = bb->workspace_size(), sku = bb->sku().name();
      } else {
        eb = *EmbeddingBackwardPlan::select(ed, pref);
        wsb = eb->workspace_size(), sku = eb->sku().name();
      }
      DeviceBuffer ws(wsb);
      if (c.bag) bwd_run = [&] { return bb->run(nullptr, {ws.p, wsb}, {iref, offref, {}, {}, {}, gref, dwref, {}, {}}); };
      else bwd_run = [&] { return eb->run(nullptr, {ws.p, wsb}, {iref, gref, dwref, {}}); };
      BENCH_CUDA_OK(cudaMemset(dw.p, 0xFF, static_cast<size_t>(c.V * c.D) * es));
      Status st = bwd_run();
      BENCH_CUDA_OK(cudaDeviceSynchronize());
      if (!st.ok()) std::fprintf(stderr, "embedding %s bwd: %s\n", tag.c_str(), st.to_string().c_str());
      bool okb = st.ok() && verify_dweight(c, ids, gh, dw.p, c.bag ? &bag_row : &pos_row);
      const double us_b = median_us([&] { (void)bwd_run(); }, warm, reps);
      recs.push_back({c, det ? "bwd_sort" : "bwd_scatter", sku, us_b, 1.0 * c.V * c.D * es + 1.0 * rows_out * c.D * es + ids_bytes, okb});
      failures += !okb;
    }
    BENCH_CUDA_OK(cudaGetLastError());
  }
  print_bandwidth("embedding", recs, ceiling, [](const EmbCase& c) { return c.name + " " + c.dist; });
  if (!json_path.empty() &&
      !write_bandwidth_json(json_path, ceiling, "", recs, [](const EmbCase& c) {
        return strf("\"op\": \"%s\", \"case\": \"%s\", \"dist\": \"%s\", \"V\": %lld, \"D\": %lld, \"N\": %lld, \"B\": %lld, "
                    "\"shape\": [%lld, %lld], \"row_read_tbps\": %.4f",
                    c.bag ? "embedding_bag" : "embedding", c.name.c_str(), c.dist.c_str(), (long long)c.V, (long long)c.D,
                    (long long)c.N, (long long)c.B, (long long)c.V, (long long)c.D, c.row_read_tbps);
      }))
    return failures + 1;
  return failures;
}

}  // namespace baracuda::bench
