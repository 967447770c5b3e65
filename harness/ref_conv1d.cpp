// Reference adapters of the causal_conv1d rows. The reference takes [B, C, L] data; channel-last
// views are permuted on the way in and out. Error scale: the same sums over absolute values
// (SiLU's derivative is below 1.1: twice those sums bound the backward's).
#include "baracuda/ops/causal_conv1d.hpp"
#include "causal_conv1d_ref.hpp"
#include "harness/op_case.hpp"
#include "harness/ref_common.hpp"

namespace baracuda::harness {

namespace {

// [B, L, C] (row-major) <-> [B, C, L]: v in `lay`'s order to channel-first (to_channel_first), or back
std::vector<double> relayout(const std::vector<double>& v, Conv1dLayout lay, int64_t B, int64_t C, int64_t L, bool to_channel_first) {
  if (lay == Conv1dLayout::kBCL) return v;
  std::vector<double> r(v.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < L; ++t)
      for (int64_t ch = 0; ch < C; ++ch) {
        const size_t blc = static_cast<size_t>((b * L + t) * C + ch), bcl = static_cast<size_t>((b * C + ch) * L + t);
        if (to_channel_first) r[bcl] = v[blc];
        else r[blc] = v[bcl];
      }
  return r;
}
std::vector<double> to_bcl(const std::vector<double>& v, Conv1dLayout lay, int64_t B, int64_t C, int64_t L) { return relayout(v, lay, B, C, L, true); }
std::vector<double> from_bcl(const std::vector<double>& v, Conv1dLayout lay, int64_t B, int64_t C, int64_t L) { return relayout(v, lay, B, C, L, false); }

std::vector<double> in_or_empty(RefCall& c, const char* name) {
  RefOperand* r = c.find(name);
  return r ? r->in : std::vector<double>{};
}

void doubled(std::vector<double>& v) {
  for (double& e : v) e *= 2;
}

Status forward(RefCall& c) {
  const CausalConv1dDescriptor& d = c.desc<CausalConv1dDescriptor>();
  const ref::Conv1dShape s{d.batch, d.channels, d.seq, d.width, d.activation == Conv1dActivation::kSiLU};
  ref::Conv1dShape sa = s;
  sa.silu = false;
  const auto x = to_bcl(c["x"].in, d.layout, d.batch, d.channels, d.seq);
  const auto w = c["weight"].in, b = in_or_empty(c, "bias"), s0 = in_or_empty(c, "initial_states");
  std::vector<double> y, fin, my, mf;
  ref::causal_conv1d_forward(s, x, w, b, s0, &y, &fin);
  ref::causal_conv1d_forward(sa, abs_of(x), abs_of(w), abs_of(b), abs_of(s0), &my, &mf);
  doubled(my);
  RefOperand& yo = c["y"];
  yo.want = from_bcl(y, d.layout, d.batch, d.channels, d.seq);
  yo.mag = from_bcl(my, d.layout, d.batch, d.channels, d.seq);
  if (RefOperand* f = c.find("final_states")) {
    f->want = fin;
    f->exact = true;  // the last inputs, moved
  }
  return {};
}

Status backward(RefCall& c) {
  const CausalConv1dDescriptor& d = c.desc<CausalConv1dDescriptor>();
  const ref::Conv1dShape s{d.batch, d.channels, d.seq, d.width, d.activation == Conv1dActivation::kSiLU};
  ref::Conv1dShape sa = s;
  sa.silu = false;
  const auto x = to_bcl(c["x"].in, d.layout, d.batch, d.channels, d.seq), dy = to_bcl(c["dy"].in, d.layout, d.batch, d.channels, d.seq);
  const auto w = c["weight"].in, b = in_or_empty(c, "bias"), s0 = in_or_empty(c, "initial_states");
  const auto dfin = in_or_empty(c, "dfinal_states");
  std::vector<double> dx, dw, db, ds0, mdx, mdw, mdb, mds0;
  ref::causal_conv1d_backward(s, x, w, b, s0, dy, dfin, &dx, &dw, &db, &ds0);
  ref::causal_conv1d_backward(sa, abs_of(x), abs_of(w), abs_of(b), abs_of(s0), abs_of(dy), abs_of(dfin), &mdx, &mdw, &mdb, &mds0);
  for (auto* m : {&mdx, &mdw, &mdb, &mds0}) doubled(*m);
  RefOperand& dxo = c["dx"];
  dxo.want = from_bcl(dx, d.layout, d.batch, d.channels, d.seq);
  dxo.mag = from_bcl(mdx, d.layout, d.batch, d.channels, d.seq);
  c["dweight"].want = dw, c["dweight"].mag = mdw;
  if (RefOperand* o = c.find("dbias")) o->want = db, o->mag = mdb;
  if (RefOperand* o = c.find("dinitial_states")) o->want = ds0, o->mag = mds0;
  return {};
}

void update_fill(RefCall& c) {
  const CausalConv1dUpdateDescriptor& d = c.desc<CausalConv1dUpdateDescriptor>();
  if (RefOperand* l = c.find("cache_seqlens")) {  // any value: taken mod S (negative ones wrap)
    l->in.resize(static_cast<size_t>(d.batch));
    for (double& v : l->in) v = static_cast<double>(static_cast<int64_t>(c.rng()() % 1000) - 100);
    l->given = true;
  }
  if (RefOperand* i = c.find("state_indices")) {  // rows of the state, one in eight a padding row
    i->in.resize(static_cast<size_t>(d.batch));
    for (double& v : i->in) v = c.rng()() % 8 == 0 ? -1.0 : static_cast<double>(c.rng()() % static_cast<uint64_t>(d.state_rows()));
    i->given = true;
  }
}

Status update(RefCall& c) {
  const CausalConv1dUpdateDescriptor& d = c.desc<CausalConv1dUpdateDescriptor>();
  const ref::Conv1dShape s{d.batch, d.channels, d.seq, d.width, d.activation == Conv1dActivation::kSiLU};
  ref::Conv1dShape sa = s;
  sa.silu = false;
  auto to32 = [](const std::vector<double>& v) {
    std::vector<int32_t> r(v.size());
    for (size_t i = 0; i < v.size(); ++i) r[i] = static_cast<int32_t>(v[i]);
    return r;
  };
  const auto seqlens = to32(in_or_empty(c, "cache_seqlens")), indices = to32(in_or_empty(c, "state_indices"));
  const auto x = to_bcl(c["x"].in, d.layout, d.batch, d.channels, d.seq);
  const auto w = c["weight"].in, b = in_or_empty(c, "bias");
  std::vector<double> state = c["conv_state"].in, astate = abs_of(state);
  const auto y = ref::causal_conv1d_update(s, d.seq, d.state_length(), x, w, b, &state, d.state_rows(), seqlens, indices);
  auto my = ref::causal_conv1d_update(sa, d.seq, d.state_length(), abs_of(x), abs_of(w), abs_of(b), &astate, d.state_rows(), seqlens,
                                      indices);
  doubled(my);
  RefOperand& yo = c["y"];
  yo.want = from_bcl(y, d.layout, d.batch, d.channels, d.seq);
  yo.mag = from_bcl(my, d.layout, d.batch, d.channels, d.seq);
  RefOperand& so = c["conv_state"];
  so.want = state;
  so.exact = true;  // inputs moved
  return {};
}

}  // namespace

OpRef ref_causal_conv1d() { return {nullptr, &forward, nullptr}; }
OpRef ref_causal_conv1d_backward() { return {nullptr, &backward, nullptr}; }
OpRef ref_causal_conv1d_update() { return {&update_fill, &update, nullptr}; }

}  // namespace baracuda::harness
