#include <sstream>

#include "core/loop/stmt.h"
#include "core/te/printer.h"

namespace souffle::loop {

namespace {

std::string indices_str(const std::vector<Expr>& idx) {
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) {
    if (i) s += ", ";
    s += te::print(idx[i]);
  }
  return s + "]";
}

std::string buffer_decl(const Tensor& t) {
  return t->name + ": " + dtype_name(t->dtype) + shape_str(t->shape);
}

class Printer {
 public:
  explicit Printer(std::ostringstream& out) : m_out(out) {}

  void print(const Stmt& s) {
    if (!s.defined()) {
      line("<undefined>");
      return;
    }
    switch (s.kind()) {
#define SOUFFLE_X(N)       \
  case StmtKind::N:        \
    print_##N(*s.as<N>()); \
    break;
      SOUFFLE_LOOP_STMT_NODES(SOUFFLE_X)
#undef SOUFFLE_X
    }
  }

 private:
  void line(const std::string& text) {
    m_out << std::string(2 * m_depth, ' ') << text << "\n";
  }
  void nested(const Stmt& s) {
    ++m_depth;
    print(s);
    --m_depth;
  }

  void print_For(const For& n) {
    line("for " + te::print(n.var) + " in " + te::print(n.min) + " .. +" + te::print(n.extent) +
         " " + for_kind_name(n.for_kind) + " {");
    nested(n.body);
    line("}");
  }
  void print_LetStmt(const LetStmt& n) {
    line("let " + te::print(n.var) + " = " + te::print(n.value));
    print(n.body);
  }
  void print_Allocate(const Allocate& n) {
    line(std::string("allocate ") + scope_name(n.scope) + " " + buffer_decl(n.buffer));
    print(n.body);
  }
  void print_Store(const Store& n) {
    line(n.buffer->name + indices_str(n.indices) + " = " + te::print(n.value));
  }
  void print_AtomicAdd(const AtomicAdd& n) {
    line("atomic_add " + n.buffer->name + indices_str(n.indices) + " += " + te::print(n.value));
  }
  void print_Shuffle(const Shuffle& n) {
    line(n.buffer->name + indices_str(n.indices) + " = shuffle_" + shuffle_kind_name(n.shuffle) +
         "(" + te::print(n.value) + ", " + te::print(n.arg) + ")");
  }
  void print_IfThenElse(const IfThenElse& n) {
    line("if " + te::print(n.cond) + " {");
    nested(n.then_case);
    if (n.else_case.defined()) {
      line("} else {");
      nested(n.else_case);
    }
    line("}");
  }
  void print_Seq(const Seq& n) {
    for (const Stmt& s : n.stmts) print(s);
  }
  void print_BlockBarrier(const BlockBarrier&) {
    line("block_barrier()");
  }
  void print_GridBarrier(const GridBarrier&) {
    line("grid_barrier()");
  }
  void print_FlagRelease(const FlagRelease& n) {
    line("flag_release " + n.flags->name + "[" + te::print(n.index) + "] (stage " +
         std::to_string(n.stage) + ")");
  }
  void print_FlagWait(const FlagWait& n) {
    line("flag_wait " + n.flags->name + "[" + te::print(n.first) + " +: " + te::print(n.count) +
         "] >= epoch * " + std::to_string(n.per_run));
  }
  void print_Stage(const Stage& n) {
    line("stage " + std::to_string(n.index) + " {");
    nested(n.body);
    line("}");
  }
  void print_Evaluate(const Evaluate& n) {
    line("evaluate " + te::print(n.value));
  }
  void print_Comment(const Comment& n) {
    line("// " + n.text);
  }
  void print_TimelineRecord(const TimelineRecord& n) {
    line(std::string("timeline ") + timeline_event_name(n.event) +
         (n.wait != TimelineWait::None ? std::string(" ") + timeline_wait_name(n.wait) : "") +
         " stage " + std::to_string(n.stage) + " -> " + n.buffer->name + "[block / " +
         std::to_string(n.stride) + "][" + std::to_string(n.slot) + "]");
  }
  void print_FragmentAlloc(const FragmentAlloc& n) {
    line(std::string("fragment ") + fragment_role_name(n.role) + " " + mma_type_name(n.type) +
         " m" + std::to_string(n.m) + "n" + std::to_string(n.n) + "k" + std::to_string(n.k) + " " +
         buffer_decl(n.buffer));
    print(n.body);
  }
  void print_FragmentFill(const FragmentFill& n) {
    line("fill_fragment " + n.fragment->name + "[" + te::print(n.index) +
         "] = " + te::print(n.value));
  }
  void print_FragmentLoad(const FragmentLoad& n) {
    line("load_matrix_sync " + n.fragment->name + "[" + te::print(n.index) + "] <- " +
         n.source->name + indices_str(n.origin));
  }
  void print_FragmentMma(const FragmentMma& n) {
    auto f = [](const Tensor& t, const Expr& i) { return t->name + "[" + te::print(i) + "]"; };
    line("mma_sync " + f(n.d, n.di) + " = " + f(n.a, n.ai) + " * " + f(n.b, n.bi) + " + " +
         f(n.c, n.ci));
  }
  void print_FragmentStore(const FragmentStore& n) {
    line("store_matrix_sync " + n.dest->name + indices_str(n.origin) + " <- " + n.fragment->name +
         "[" + te::print(n.index) + "]");
  }
  void print_AsyncCopy(const AsyncCopy& n) {
    line(std::string("cp.async.") + (n.bytes == 16 ? "cg" : "ca") + " " + std::to_string(n.bytes) +
         "B " + n.dst->name + indices_str(n.dst_index) + " <- " + n.src->name +
         indices_str(n.src_index) + (n.pred.defined() ? " if " + te::print(n.pred) : ""));
  }
  void print_AsyncCommit(const AsyncCommit&) {
    line("cp.async.commit_group");
  }
  void print_AsyncWait(const AsyncWait& n) {
    line("cp.async.wait_group " + std::to_string(n.pending));
  }
  void print_MatrixLoad(const MatrixLoad& n) {
    line("ldmatrix.x" + std::to_string(n.count) + (n.trans ? ".trans " : " ") + n.dst->name + "[" +
         te::print(n.dst_offset) + "] <- " + n.src->name + indices_str(n.src_index));
  }
  void print_MmaSync(const MmaSync& n) {
    auto f = [](const Tensor& t, const Expr& i) { return t->name + "[" + te::print(i) + "]"; };
    line("mma.sync m16n8k" + std::to_string(mma_sync_k(n.type)) + " " + mma_type_name(n.type) +
         " " + f(n.d, n.d_offset) + " = " + f(n.a, n.a_offset) + " * " + f(n.b, n.b_offset) +
         " + " + f(n.c, n.c_offset));
  }
  void print_WgmmaFence(const WgmmaFence&) {
    line("wgmma.fence");
  }
  void print_WgmmaMma(const WgmmaMma& n) {
    auto desc = [](const Tensor& t, const std::vector<Expr>& i, int64_t lbo, int64_t sbo) {
      return t->name + indices_str(i) + "{lbo " + std::to_string(lbo) + ", sbo " +
             std::to_string(sbo) + "}";
    };
    line("wgmma.mma_async m64n" + std::to_string(n.n) + "k16 " + mma_type_name(n.type) + " " +
         n.d->name + "[" + te::print(n.d_offset) + "] " + (n.accumulate ? "+= " : "= ") +
         desc(n.a, n.a_index, n.a_lbo, n.a_sbo) + " * " + desc(n.b, n.b_index, n.b_lbo, n.b_sbo));
  }
  void print_WgmmaCommit(const WgmmaCommit&) {
    line("wgmma.commit_group");
  }
  void print_WgmmaWait(const WgmmaWait& n) {
    line("wgmma.wait_group " + std::to_string(n.pending));
  }

  std::ostringstream& m_out;
  int m_depth = 0;
};

}  // namespace

std::string print(const Stmt& s) {
  std::ostringstream out;
  Printer(out).print(s);
  return out.str();
}

std::string print(const Kernel& k) {
  std::ostringstream out;
  out << "kernel " << k.name << " grid " << k.launch.grid_x << " block " << k.launch.block_x
      << " shared " << k.launch.dynamic_shared_bytes << (k.launch.cooperative ? " cooperative" : "")
      << "\n";
  for (const Tensor& t : k.inputs) out << "  in  " << buffer_decl(t) << "\n";
  for (const Tensor& t : k.outputs) out << "  out " << buffer_decl(t) << "\n";
  for (const Tensor& t : k.flags) out << "  flags " << buffer_decl(t) << "\n";
  for (size_t i = 0; i < k.stages.size(); ++i) {
    const StageInfo& st = k.stages[i];
    out << "  stage " << i << " " << st.name << " (" << st.schedule << ", grid " << st.grid_x
        << " block " << st.block_x << "):";
    for (size_t j = 0; j < st.tes.size(); ++j) {
      out << " " << st.tes[j];
      if (j < st.origins.size() && !st.origins[j].node.empty())
        out << " <- " << st.origins[j].node << " (" << st.origins[j].op_type << ")";
    }
    out << "\n";
  }
  for (const SharedSlot& s : k.shared)
    out << "  shared " << s.buffer->name << " @" << s.offset << " +" << s.bytes << "\n";
  out << print(k.body);
  return out.str();
}

std::string print(const KernelSet& ks) {
  std::string s = "kernels " + ks.name + " (" + std::to_string(ks.kernels.size()) + ")\n";
  for (const Kernel& k : ks.kernels) s += print(k);
  return s;
}

}  // namespace souffle::loop
