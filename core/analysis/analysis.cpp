// Global analysis: characterize each TE through its reads, then relate the TEs through the
// tensors they share (dependency graph, live ranges, BFS levels, spatial and temporal reuse).
#include "core/analysis/analysis.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/analysis/access.h"
#include "core/te/equal.h"
#include "core/te/mutator.h"

namespace souffle::analysis {
namespace {

/// Tensors read in `e` through an index that varies with one of the reduce vars.
std::set<const te::TensorNode*> reduce_varying_tensors(
    const te::Expr& e, const std::set<const te::ExprNode*>& reduce_vars) {
  std::set<const te::TensorNode*> out;
  te::for_each_node(e, [&](const te::Expr& n) {
    const te::Read* r = n.as<te::Read>();
    if (!r) return;
    bool varies = false;
    for (const te::Expr& idx : r->indices)
      te::for_each_node(idx, [&](const te::Expr& v) {
        if (v.kind() == te::ExprKind::Var && reduce_vars.count(v.get())) varies = true;
      });
    if (varies) out.insert(r->tensor.get());
  });
  return out;
}

/// A sum of products whose factors read different reduce-varying tensors (A[i,k] * B[k,j]; a
/// convolution's input and weights) — not a sum of sums (a mean over a residual add) nor a square
/// of one expression (a variance).
bool is_sum_of_products(const te::ComputeOp& op) {
  if (op.reduce != te::ReduceKind::Sum) return false;
  std::set<const te::ExprNode*> reduce_vars;
  for (const te::IterVar& iv : op.reduce_axes) reduce_vars.insert(iv.var.get());
  bool found = false;
  te::for_each_node(op.body, [&](const te::Expr& n) {
    const te::Binary* b = n.as<te::Binary>();
    if (found || !b || b->op != te::BinaryOp::Mul) return;
    auto a_set = reduce_varying_tensors(b->a, reduce_vars);
    auto b_set = reduce_varying_tensors(b->b, reduce_vars);
    found = !a_set.empty() && !b_set.empty() && a_set != b_set;
  });
  return found;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

bool same_indices(const te::Read& a, const te::Read& b) {
  if (a.indices.size() != b.indices.size()) return false;
  for (size_t d = 0; d < a.indices.size(); ++d)
    if (!te::equal(a.indices[d], b.indices[d])) return false;
  return true;
}

/// Characterizes one op; `tensor_id` maps each tensor read (and the output) to its index.
TeInfo characterize(const te::ComputeOp& op,
                    const std::function<int(const te::Tensor&)>& tensor_id) {
  TeInfo t;
  t.name = op.name;
  t.origin_node = op.origin.node;
  t.origin_op = op.origin.op_type;
  t.shape = op.output->shape;
  t.output_tensor = tensor_id(op.output);
  t.is_reduction = op.reduce != te::ReduceKind::None;
  t.iterations = 1;
  for (const te::IterVar& a : op.axes) t.iterations *= a.extent;
  if (t.is_reduction)
    for (const te::IterVar& r : op.reduce_axes) t.iterations *= r.extent;

  // Distinct reads per tensor, in order of first appearance.
  struct Group {
    const te::TensorNode* tensor;
    te::Tensor handle;
    std::vector<const te::Read*> reads;
  };
  std::vector<Group> groups;
  te::for_each_node(op.body, [&](const te::Expr& e) {
    const auto* r = e.as<te::Read>();
    if (!r) return;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const Group& x) { return x.tensor == r->tensor.get(); });
    if (g == groups.end()) {
      groups.push_back({r->tensor.get(), r->tensor, {}});
      g = groups.end() - 1;
    }
    for (const te::Read* seen : g->reads)
      if (same_indices(*seen, *r)) return;
    g->reads.push_back(r);
  });

  int varying_inputs = 0;
  for (const Group& g : groups) {
    InputAccess in;
    in.tensor = tensor_id(g.handle);
    in.name = g.handle->name;
    in.quasi_affine = true;
    bool reduce_dependent = false;
    for (const te::Read* r : g.reads) {
      in.reads.push_back(analyze_read(*r, op));
      const ReadInfo& ri = in.reads.back();
      in.quasi_affine = in.quasi_affine && ri.quasi_affine;
      reduce_dependent = reduce_dependent || ri.uses_reduce_axes;
    }
    in.kind = (reduce_dependent || in.reads.size() > 1) ? AccessKind::OneReliesOnMany
                                                        : AccessKind::OneReliesOnOne;
    in.injective = in.kind == AccessKind::OneReliesOnOne && in.reads.front().injective;
    in.elements = std::min(numel(g.handle->shape), t.iterations);
    if (reduce_dependent) ++varying_inputs;
    t.bytes_read += in.elements * dtype_size(g.handle->dtype);
    t.elements_accessed += in.elements;
    t.inputs.push_back(std::move(in));
  }
  int64_t out_elems = numel(op.output->shape);
  t.bytes_written = out_elems * dtype_size(op.output->dtype);
  t.elements_accessed += out_elems;
  t.flops_per_point = count_flops(op.body) + (t.is_reduction ? 1 : 0);
  t.flops = t.flops_per_point * t.iterations;
  t.arithmetic_intensity =
      t.elements_accessed > 0 ? static_cast<double>(t.flops) / t.elements_accessed : 0.0;
  t.is_contraction = varying_inputs >= 2 && is_sum_of_products(op);
  char buf[96];
  if (t.arithmetic_intensity >= kComputeIntensityThreshold) {
    t.kind = Intensity::Compute;
    std::snprintf(buf, sizeof buf, "intensity %.2f >= %g", t.arithmetic_intensity,
                  kComputeIntensityThreshold);
  } else if (t.is_contraction) {
    t.kind = Intensity::Compute;
    std::snprintf(buf, sizeof buf, "contraction (intensity %.2f < %g)", t.arithmetic_intensity,
                  kComputeIntensityThreshold);
  } else {
    t.kind = Intensity::Memory;
    std::snprintf(buf, sizeof buf, "intensity %.2f < %g", t.arithmetic_intensity,
                  kComputeIntensityThreshold);
  }
  t.kind_reason = buf;
  t.is_pure_view = !t.is_reduction && op.body.kind() == te::ExprKind::Read &&
                   t.inputs.size() == 1 && t.inputs[0].reads.size() == 1 && t.inputs[0].injective &&
                   t.inputs[0].quasi_affine;
  return t;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

const char* source_name(te::TensorNode::Source s) {
  switch (s) {
    case te::TensorNode::Source::Input:
      return "input";
    case te::TensorNode::Source::Constant:
      return "constant";
    case te::TensorNode::Source::Compute:
      return "compute";
  }
  return "?";
}

std::string ops_str(const std::vector<int>& ops) {
  std::string out;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(ops[i]);
  }
  return out.empty() ? "-" : out;
}

}  // namespace

const char* access_kind_name(AccessKind k) {
  return k == AccessKind::OneReliesOnOne ? "one-relies-on-one" : "one-relies-on-many";
}
const char* intensity_name(Intensity k) {
  return k == Intensity::Compute ? "compute-intensive" : "memory-intensive";
}
const char* reuse_kind_name(ReuseKind k) {
  return k == ReuseKind::Spatial ? "spatial" : "temporal";
}

int Analysis::tensor_index(const std::string& name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

TeInfo analyze_op(const te::ComputeOp& op) {
  std::unordered_map<const te::TensorNode*, int> ids;
  TeInfo t = characterize(op, [&](const te::Tensor& x) {
    auto [it, fresh] = ids.emplace(x.get(), static_cast<int>(ids.size()));
    return it->second;
  });
  t.op = 0;
  return t;
}

Analysis analyze(const te::TeProgram& program) {
  Analysis a;
  a.program = program.name;
  std::unordered_map<const te::TensorNode*, int> ids;
  auto tensor_id = [&](const te::Tensor& x) {
    auto [it, fresh] = ids.emplace(x.get(), static_cast<int>(a.tensors.size()));
    if (fresh) {
      TensorInfo ti;
      ti.name = x->name;
      ti.shape = x->shape;
      ti.dtype = x->dtype;
      ti.source = x->source;
      ti.elements = numel(x->shape);
      ti.bytes = ti.elements * dtype_size(x->dtype);
      a.tensors.push_back(std::move(ti));
    }
    return it->second;
  };
  for (const te::Tensor& in : program.inputs) tensor_id(in);

  const int n = static_cast<int>(program.ops.size());
  for (int i = 0; i < n; ++i) {
    const te::ComputeOp& op = *program.ops[static_cast<size_t>(i)];
    TeInfo t = characterize(op, tensor_id);
    t.op = i;
    TensorInfo& out = a.tensors[static_cast<size_t>(t.output_tensor)];
    SOUFFLE_CHECK(out.producer < 0, "tensor " + out.name + " produced twice");
    out.producer = i;
    for (const InputAccess& in : t.inputs) {
      std::vector<int>& c = a.tensors[static_cast<size_t>(in.tensor)].consumers;
      if (c.empty() || c.back() != i) c.push_back(i);
    }
    a.total_flops += t.flops;
    a.total_bytes += t.bytes_read + t.bytes_written;
    if (t.kind == Intensity::Compute)
      ++a.compute_intensive;
    else
      ++a.memory_intensive;
    if (t.is_pure_view) ++a.pure_views;
    a.tes.push_back(std::move(t));
  }
  for (const te::Tensor& o : program.outputs)
    a.tensors[static_cast<size_t>(tensor_id(o))].is_output = true;

  for (TensorInfo& t : a.tensors) {
    t.first_op = t.producer >= 0 ? t.producer : (t.consumers.empty() ? -1 : t.consumers.front());
    t.last_op = t.consumers.empty() ? t.producer : t.consumers.back();
    if (t.is_output) t.last_op = n;
  }

  // Levels and ancestor sets (bitsets: programs have at most tens of thousands of TEs).
  const size_t words = (static_cast<size_t>(n) + 63) / 64;
  std::vector<std::vector<uint64_t>> anc(static_cast<size_t>(n), std::vector<uint64_t>(words, 0));
  for (int i = 0; i < n; ++i) {
    TeInfo& t = a.tes[static_cast<size_t>(i)];
    for (const InputAccess& in : t.inputs) {
      int p = a.tensors[static_cast<size_t>(in.tensor)].producer;
      if (p < 0) continue;
      SOUFFLE_CHECK(p < i, "ops are not in topological order at " + t.name);
      t.level = std::max(t.level, a.tes[static_cast<size_t>(p)].level + 1);
      auto& mine = anc[static_cast<size_t>(i)];
      const auto& theirs = anc[static_cast<size_t>(p)];
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[static_cast<size_t>(p) / 64] |= uint64_t{1} << (p % 64);
    }
  }
  a.bfs_order.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) a.bfs_order[static_cast<size_t>(i)] = i;
  std::stable_sort(a.bfs_order.begin(), a.bfs_order.end(), [&](int x, int y) {
    return a.tes[static_cast<size_t>(x)].level < a.tes[static_cast<size_t>(y)].level;
  });

  auto depends = [&](int later, int earlier) {
    return (anc[static_cast<size_t>(later)][static_cast<size_t>(earlier) / 64] >> (earlier % 64)) &
           1u;
  };
  for (size_t ti = 0; ti < a.tensors.size(); ++ti) {
    const TensorInfo& t = a.tensors[ti];
    if (t.consumers.size() < 2) continue;
    std::vector<bool> spatial(t.consumers.size()), temporal(t.consumers.size());
    for (size_t x = 0; x < t.consumers.size(); ++x)
      for (size_t y = x + 1; y < t.consumers.size(); ++y) {
        bool dep = depends(t.consumers[y], t.consumers[x]);
        (dep ? temporal : spatial)[x] = true;
        (dep ? temporal : spatial)[y] = true;
      }
    for (ReuseKind kind : {ReuseKind::Spatial, ReuseKind::Temporal}) {
      const std::vector<bool>& in = kind == ReuseKind::Spatial ? spatial : temporal;
      ReuseSite s;
      s.kind = kind;
      s.tensor = static_cast<int>(ti);
      s.name = t.name;
      s.elements = t.elements;
      s.bytes = t.bytes;
      for (size_t x = 0; x < in.size(); ++x)
        if (in[x]) s.readers.push_back(t.consumers[x]);
      if (!s.readers.empty()) a.reuse.push_back(std::move(s));
    }
  }
  return a;
}

std::string print(const Analysis& a) {
  std::ostringstream os;
  os << "analysis " << a.program << ": " << a.tes.size() << " TEs (" << a.compute_intensive
     << " compute-intensive, " << a.memory_intensive << " memory-intensive, " << a.pure_views
     << " pure views), " << a.total_flops << " FLOPs, " << a.total_bytes << " bytes\n";
  os << "threshold: compute-intensive at >= " << kComputeIntensityThreshold
     << " FLOPs per element accessed, or a contraction\n";
  for (const TeInfo& t : a.tes) {
    os << "te " << t.op << " " << t.name << " " << shape_str(t.shape);
    if (!t.origin_node.empty() || !t.origin_op.empty())
      os << " (" << t.origin_node << " " << t.origin_op << ")";
    os << ": " << intensity_name(t.kind) << " (" << t.kind_reason << ")"
       << (t.is_reduction ? ", reduction" : "") << (t.is_contraction ? ", contraction" : "")
       << (t.is_pure_view ? ", pure view" : "") << ", level " << t.level << "\n";
    os << "  flops " << t.flops << " (" << t.flops_per_point << " x " << t.iterations << "), read "
       << t.bytes_read << " B, written " << t.bytes_written << " B\n";
    for (const InputAccess& in : t.inputs) {
      os << "  reads " << in.name << ": " << access_kind_name(in.kind);
      if (in.kind == AccessKind::OneReliesOnOne)
        os << (in.injective ? ", injective" : ", not injective");
      os << (in.quasi_affine ? ", quasi-affine" : ", not quasi-affine") << ", " << in.elements
         << " elements\n";
      for (const ReadInfo& r : in.reads) {
        os << "    " << r.indices;
        if (r.uses_reduce_axes) os << " varies with reduce axes";
        if (r.data_dependent) os << " data-dependent";
        if (!r.broadcast_axes.empty()) {
          os << " broadcast over axes";
          for (int b : r.broadcast_axes) os << " " << b;
        }
        os << "\n";
      }
    }
  }
  os << "tensors:\n";
  for (const TensorInfo& t : a.tensors) {
    os << "  " << t.name << " " << dtype_name(t.dtype) << shape_str(t.shape) << " "
       << source_name(t.source) << (t.is_output ? " output" : "") << ", " << t.bytes
       << " B, producer " << (t.producer >= 0 ? std::to_string(t.producer) : "-") << ", consumers "
       << ops_str(t.consumers) << ", live [" << t.first_op << ", " << t.last_op << "]\n";
  }
  os << "bfs: " << ops_str(a.bfs_order) << "\n";
  os << "reuse:\n";
  for (const ReuseSite& s : a.reuse)
    os << "  " << reuse_kind_name(s.kind) << " " << s.name << " (" << s.elements << " elements, "
       << s.bytes << " B): tes " << ops_str(s.readers) << "\n";
  return os.str();
}

}  // namespace souffle::analysis
