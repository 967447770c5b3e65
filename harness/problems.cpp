#include "harness/problems.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace baracuda::harness {

namespace {

Status bad(std::string_view token, const std::string& why) {
  return Status(StatusCode::kInvalidProblem, "problem line: '" + std::string(token) + "': " + why);
}

bool split_named(std::string_view v, std::string* name, std::string_view* rest) {
  const size_t colon = v.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  *name = std::string(v.substr(0, colon));
  *rest = v.substr(colon + 1);
  return true;
}

}  // namespace

bool parse_layout(std::string_view name, Layout* out) {
  for (Layout l : {Layout::kContiguous, Layout::kOffset1, Layout::kOffset3, Layout::kStep2, Layout::kPaddedRows, Layout::kPermuted,
                   Layout::kNegativeLast, Layout::kBroadcast, Layout::kTransposed})
    if (name == layout_name(l)) return *out = l, true;
  return false;
}

Result<ProblemLine> parse_problem_line(std::string_view text) {
  ProblemLine p;
  size_t i = 0;
  auto next = [&]() -> std::string_view {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    const size_t b = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    return text.substr(b, i - b);
  };
  p.op = std::string(next());
  if (p.op.empty()) return bad(text, "no op name");
  for (std::string_view t = next(); !t.empty(); t = next()) {
    if (t.substr(0, 2) != "--") {
      p.problem += (p.problem.empty() ? "" : " ") + std::string(t);
      continue;
    }
    p.options += (p.options.empty() ? "" : " ") + std::string(t);
    const size_t eq = t.find('=');
    const std::string_view key = t.substr(2, eq == std::string_view::npos ? std::string_view::npos : eq - 2);
    const std::string_view val = eq == std::string_view::npos ? std::string_view{} : t.substr(eq + 1);
    std::string name;
    std::string_view rest;
    if (key == "inplace") p.opt.inplace = true;
    else if (key == "specials") p.opt.specials = true;
    else if (key == "data") p.opt.data = std::string(val);
    else if (key == "graph") p.graph = true;
    else if (key == "pref") p.pref += (p.pref.empty() ? "" : " ") + std::string(val);
    else if (key == "seed") p.opt.seed = std::strtoull(std::string(val).c_str(), nullptr, 10);
    else if (key == "layout") {
      if (!parse_layout(val, &p.opt.layout)) return bad(t, "unknown layout");
    } else if (key == "view") {
      Layout l;
      if (!split_named(val, &name, &rest) || !parse_layout(rest, &l)) return bad(t, "expected --view=NAME:LAYOUT");
      p.opt.views[name] = l;
    } else if (key == "alias") {
      std::string_view in;
      if (!split_named(val, &name, &in)) return bad(t, "expected --alias=OUTPUT:INPUT");
      p.opt.alias[name] = std::string(in);
    } else if (key == "strides") {
      if (!split_named(val, &name, &rest)) return bad(t, "expected --strides=NAME:S0,S1,...");
      std::vector<int64_t> s;
      for (size_t b = 0; b <= rest.size();) {
        const size_t e = std::min(rest.find(',', b), rest.size());
        s.push_back(std::strtoll(std::string(rest.substr(b, e - b)).c_str(), nullptr, 10));
        b = e + 1;
      }
      p.opt.strides[name] = s;
    } else {
      return bad(t, "unknown option (--layout --view --strides --alias --inplace --data --specials --seed --pref --graph)");
    }
  }
  return p;
}

Result<std::vector<ProblemLine>> read_problem_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status(StatusCode::kInvalidProblem, "cannot read problem file " + path);
  std::vector<ProblemLine> out;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (const size_t h = line.find('#'); h != std::string::npos) line.resize(h);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto p = parse_problem_line(line);
    if (!p) return Status(p.status().code(), path + ":" + std::to_string(n) + ": " + p.status().message());
    p->where = path + ":" + std::to_string(n);
    out.push_back(std::move(*p));
  }
  return out;
}

std::vector<std::string> problem_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".txt") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace baracuda::harness
