#include "core/plan/horizontal.h"

#include <algorithm>
#include <map>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "core/te/mutator.h"
#include "core/te/printer.h"
#include "core/te/verify.h"

namespace souffle::plan {

const char* transform_kind_name(TransformKind k) {
  switch (k) {
    case TransformKind::Horizontal:
      return "horizontal";
    case TransformKind::Vertical:
      return "vertical";
    case TransformKind::Attention:
      return "attention";
  }
  return "?";
}

namespace {

using te::Expr;

/// What TEs must share to be merged under one new leading axis.
std::string signature(const te::ComputeOp& op) {
  std::ostringstream s;
  s << dtype_name(op.output->dtype) << shape_str(op.output->shape) << te::reduce_name(op.reduce);
  for (const te::IterVar& r : op.reduce_axes) s << "," << r.extent;
  if (op.init.defined()) s << "|" << te::print(op.init);
  return s.str();
}

std::string site_key(const std::vector<std::string>& names) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::string key = "h:";
  for (size_t i = 0; i < sorted.size(); ++i) key += (i ? "," : "") + sorted[i];
  return key;
}

/// The op graph with some groups contracted to one node; checks that a new group keeps it acyclic.
class Contraction {
 public:
  Contraction(size_t n, std::vector<std::vector<int>> preds) : m_rep(n), m_preds(std::move(preds)) {
    for (size_t i = 0; i < n; ++i) m_rep[i] = static_cast<int>(i);
  }
  int rep(int i) const { return m_rep[i]; }

  bool acyclic_with(const std::vector<int>& group) const {
    std::vector<int> rep = m_rep;
    for (int m : group) rep[m] = rep[group[0]];
    return acyclic(rep);
  }
  void merge(const std::vector<int>& group) {
    const int r = m_rep[group[0]];
    for (int m : group) m_rep[m] = r;
  }
  /// Node order (representatives), the smallest original op index first among the ready ones.
  std::vector<int> order() const {
    std::vector<int> out;
    topo(m_rep, &out);
    return out;
  }

 private:
  bool acyclic(const std::vector<int>& rep) const { return topo(rep, nullptr); }

  bool topo(const std::vector<int>& rep, std::vector<int>* out) const {
    const size_t n = rep.size();
    std::vector<int> indeg(n, 0), first(n, -1);
    std::vector<std::vector<int>> succ(n);
    size_t nodes = 0;
    for (size_t i = 0; i < n; ++i) {
      if (first[rep[i]] < 0) {
        first[rep[i]] = static_cast<int>(i);
        ++nodes;
      }
      for (int p : m_preds[i]) {
        if (rep[p] == rep[i]) continue;
        succ[rep[p]].push_back(rep[i]);
        ++indeg[rep[i]];
      }
    }
    using Item = std::pair<int, int>;  // (first member index, node)
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
    for (size_t i = 0; i < n; ++i)
      if (first[i] >= 0 && indeg[i] == 0) ready.push({first[i], static_cast<int>(i)});
    size_t seen = 0;
    while (!ready.empty()) {
      int v = ready.top().second;
      ready.pop();
      ++seen;
      if (out) out->push_back(v);
      for (int s : succ[v])
        if (--indeg[s] == 0) ready.push({first[s], s});
    }
    return seen == nodes;
  }

  std::vector<int> m_rep;
  std::vector<std::vector<int>> m_preds;
};

struct Group {
  std::vector<int> members;  // op indices, ascending
  size_t site = 0;           // index into the result's sites
};

}  // namespace

TransformResult horizontal_transform(const te::TeProgram& program, const analysis::Analysis& an,
                                     const TransformOptions& options) {
  SOUFFLE_CHECK(an.tes.size() == program.ops.size(),
                "horizontal_transform: the analysis is not of this program");
  TransformResult res;
  const size_t n = program.ops.size();
  std::unordered_map<std::string, int> by_name;
  for (size_t i = 0; i < n; ++i) by_name[program.ops[i]->name] = static_cast<int>(i);

  // Producers of each op, and ancestors as bit sets (for independence).
  std::vector<std::vector<int>> preds(n);
  for (size_t i = 0; i < n; ++i) {
    for (const analysis::InputAccess& in : an.tes[i].inputs) {
      int p = an.tensors[in.tensor].producer;
      if (p >= 0) preds[i].push_back(p);
    }
  }
  const size_t words = (n + 63) / 64;
  std::vector<std::vector<uint64_t>> anc(n, std::vector<uint64_t>(words, 0));
  for (size_t i = 0; i < n; ++i) {
    for (int p : preds[i]) {
      for (size_t w = 0; w < words; ++w) anc[i][w] |= anc[p][w];
      anc[i][p / 64] |= uint64_t{1} << (p % 64);
    }
  }
  auto depends = [&](int a, int b) { return (anc[a][b / 64] >> (b % 64)) & 1; };
  auto independent = [&](int a, int b) { return !depends(a, b) && !depends(b, a); };

  std::vector<std::string> sig(n);
  for (size_t i = 0; i < n; ++i) sig[i] = signature(*program.ops[i]);

  Contraction graph(n, preds);
  std::vector<bool> grouped(n, false);
  std::vector<Group> groups;
  std::unordered_set<std::string> seen_keys;

  auto names_of = [&](const std::vector<int>& members) {
    std::vector<std::string> names;
    for (int m : members) names.push_back(program.ops[m]->name);
    return names;
  };
  auto apply = [&](std::vector<int> members, TransformSite& site) {
    if (!graph.acyclic_with(members)) {
      site.reason = "merging would create a cycle with an earlier merge";
      return false;
    }
    graph.merge(members);
    for (int m : members) grouped[m] = true;
    groups.push_back({members, res.sites.size()});
    site.applied = true;
    return true;
  };

  // Forced sites first: the user's grouping wins over the search's.
  for (const std::string& key : options.force) {
    if (key.rfind("h:", 0) != 0) continue;
    TransformSite site;
    site.kind = TransformKind::Horizontal;
    site.key = key;
    std::vector<int> members;
    std::string bad;
    std::stringstream list(key.substr(2));
    for (std::string name; std::getline(list, name, ',');) {
      site.ops.push_back(name);
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        bad = "no TE named " + name;
      } else if (grouped[it->second]) {
        bad = name + " is already merged";
      } else {
        members.push_back(it->second);
      }
    }
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    if (bad.empty() && members.size() < 2) bad = "a merge needs at least two TEs";
    for (size_t a = 0; a < members.size() && bad.empty(); ++a) {
      for (size_t b = a + 1; b < members.size() && bad.empty(); ++b) {
        const int x = members[a], y = members[b];
        if (sig[x] != sig[y])
          bad = program.ops[x]->name + " and " + program.ops[y]->name +
                " differ in shape, dtype or reduction";
        else if (!independent(x, y))
          bad = program.ops[x]->name + " and " + program.ops[y]->name + " depend on each other";
      }
    }
    seen_keys.insert(key);
    if (!bad.empty()) {
      site.reason = "forced merge refused: " + bad;
    } else if (apply(members, site)) {
      site.reason = "forced by a decision";
    }
    res.sites.push_back(std::move(site));
  }

  // The search: readers of one activation, bucketed by signature, greedily made independent.
  for (size_t t = 0; t < an.tensors.size(); ++t) {
    const analysis::TensorInfo& tensor = an.tensors[t];
    if (tensor.source == te::TensorNode::Source::Constant || tensor.consumers.size() < 2) continue;
    std::map<std::string, std::vector<int>> buckets;
    for (int c : tensor.consumers)
      if (!grouped[c]) buckets[sig[c]].push_back(c);
    for (auto& [s, readers] : buckets) {
      std::vector<int> members;
      for (int c : readers) {
        bool ok =
            std::all_of(members.begin(), members.end(), [&](int m) { return independent(m, c); });
        if (ok) members.push_back(c);
      }
      if (members.size() < 2) continue;
      TransformSite site;
      site.kind = TransformKind::Horizontal;
      site.ops = names_of(members);
      site.key = site_key(site.ops);
      if (!seen_keys.insert(site.key).second) continue;
      const bool reductions = std::all_of(members.begin(), members.end(),
                                          [&](int m) { return an.tes[m].is_reduction; });
      if (options.forbid.count(site.key)) {
        site.reason = "forbidden by a decision";
      } else if (!reductions) {
        site.reason = "element-wise TEs: left to the vertical transformation";
      } else if (apply(members, site)) {
        site.reason = "spatial reuse of " + tensor.name + ": " + std::to_string(members.size()) +
                      " independent " +
                      (an.tes[members[0]].is_contraction ? "contractions" : "reductions") +
                      " read it";
      }
      res.sites.push_back(std::move(site));
    }
  }

  // Merged tensors and where each member's values now live.
  std::unordered_set<std::string> names;
  for (const te::Op& op : program.ops) names.insert(op.get()->name);
  struct Slot {
    te::Tensor merged;
    int64_t k;
  };
  std::unordered_map<const te::TensorNode*, Slot> slot;
  std::vector<te::Tensor> merged_tensor(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    const te::ComputeOp& first = *program.ops[groups[g].members[0]];
    std::string name = first.name + "_h" + std::to_string(groups[g].members.size());
    while (names.count(name)) name += "_";
    names.insert(name);
    Shape shape = first.output->shape;
    shape.insert(shape.begin(), static_cast<int64_t>(groups[g].members.size()));
    merged_tensor[g] = te::make_compute_tensor(name, shape, first.output->dtype);
    for (size_t k = 0; k < groups[g].members.size(); ++k)
      slot[program.ops[groups[g].members[k]]->output.get()] = {merged_tensor[g],
                                                               static_cast<int64_t>(k)};
    res.sites[groups[g].site].result = name;
  }

  // Every body reads members through the merged tensors.
  std::vector<te::Op> rewritten(n);
  for (size_t i = 0; i < n; ++i) {
    const te::Op& op = program.ops[i];
    Expr body = te::rewrite_reads(op->body, [&](const te::Read& r, const std::vector<Expr>& idx) {
      auto it = slot.find(r.tensor.get());
      if (it == slot.end()) return Expr();
      std::vector<Expr> at{te::int_imm(it->second.k)};
      at.insert(at.end(), idx.begin(), idx.end());
      return te::read(it->second.merged, std::move(at));
    });
    if (body.same_as(op->body)) {
      rewritten[i] = op;
    } else {
      auto copy = std::make_shared<te::ComputeOp>(*op);
      copy->body = body;
      rewritten[i] = copy;
    }
  }

  std::unordered_set<const te::TensorNode*> outputs;
  for (const te::Tensor& t : program.outputs) outputs.insert(t.get());
  std::unordered_map<int, size_t> group_of_rep;
  for (size_t g = 0; g < groups.size(); ++g) group_of_rep[graph.rep(groups[g].members[0])] = g;

  res.program.name = program.name;
  res.program.inputs = program.inputs;
  res.program.outputs = program.outputs;
  for (int node : graph.order()) {
    auto git = group_of_rep.find(node);
    if (git == group_of_rep.end()) {
      res.program.ops.push_back(rewritten[node]);
      continue;
    }
    const Group& group = groups[git->second];
    const te::ComputeOp& first = *rewritten[group.members[0]];
    auto m = std::make_shared<te::ComputeOp>();
    m->name = merged_tensor[git->second]->name;
    m->output = merged_tensor[git->second];
    m->reduce = first.reduce;
    m->origin = first.origin;
    Expr g = te::var("g");
    m->axes.push_back({g, static_cast<int64_t>(group.members.size())});
    for (size_t d = 0; d < first.axes.size(); ++d)
      m->axes.push_back({te::var("i" + std::to_string(d)), first.axes[d].extent});
    for (size_t r = 0; r < first.reduce_axes.size(); ++r)
      m->reduce_axes.push_back({te::var("k" + std::to_string(r)), first.reduce_axes[r].extent});
    std::vector<Expr> bodies;
    for (int member : group.members) {
      const te::ComputeOp& op = *rewritten[member];
      std::unordered_map<const te::ExprNode*, Expr> sub;
      for (size_t d = 0; d < op.axes.size(); ++d) sub[op.axes[d].var.get()] = m->axes[d + 1].var;
      for (size_t r = 0; r < op.reduce_axes.size(); ++r)
        sub[op.reduce_axes[r].var.get()] = m->reduce_axes[r].var;
      bodies.push_back(te::substitute(op.body, sub));
      if (member == group.members[0] && op.init.defined()) m->init = te::substitute(op.init, sub);
    }
    Expr body = bodies.back();
    for (size_t k = bodies.size() - 1; k-- > 0;)
      body = te::select(te::eq(g, te::int_imm(static_cast<int64_t>(k))), bodies[k], body);
    m->body = body;
    res.program.ops.push_back(m);
    // Members that are program outputs stay as views of their slot.
    for (size_t k = 0; k < group.members.size(); ++k) {
      const te::ComputeOp& op = *program.ops[group.members[k]];
      if (!outputs.count(op.output.get())) continue;
      auto view = std::make_shared<te::ComputeOp>();
      view->name = op.name;
      view->output = op.output;
      view->axes = op.axes;
      view->origin = op.origin;
      std::vector<Expr> at{te::int_imm(static_cast<int64_t>(k))};
      for (const te::IterVar& v : op.axes) at.push_back(v.var);
      view->body = te::read(m->output, std::move(at));
      res.program.ops.push_back(view);
    }
  }
  te::verify(res.program);
  return res;
}

}  // namespace souffle::plan
