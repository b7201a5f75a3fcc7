// The FP32 GEMM template beyond its first form: double-buffered K loop, epilogue TEs in the store
// loop, tuned tiles, and convolutions of the sample models as implicit GEMMs, each emulated and
// compared with the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "core/codegen/codegen_cuda.h"
#include "core/emulate/emulate.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/spec.h"
#include "core/interp/interpreter.h"
#include "core/loop/mutator.h"
#include "core/loop/verify.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/schedule/tune.h"
#include "core/session/load.h"
#include "core/session/verify_kernels.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"
#include "tests/sample_model.h"
#include "tests/schedule/schedule_test_util.h"

namespace souffle {
namespace {

using schedule_test::random_data;
using schedule_test::rel_l2;

using schedule::ScheduleKind;
using te::Expr;
using te::Tensor;

/// Runs `ops` in the interpreter and `kernel` in the emulator on the same random inputs; the
/// worst relative L2 error over `checked` (default: the last op's output).
double compare(const std::vector<te::Op>& ops, const loop::Kernel& kernel,
               std::vector<Tensor> checked = {}) {
  te::TeProgram p = schedule_test::program_of(ops);
  if (checked.empty()) checked = {ops.back()->output};
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    auto d = random_data(p.inputs[i], static_cast<uint32_t>(7 + i));
    in.push_back(d);
    buffers[p.inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  loop::KernelSet ks;
  ks.kernels = {kernel};
  emulate::Buffers got = emulate::run_kernels(ks, buffers);
  double worst = 0;
  for (const Tensor& t : checked) {
    size_t i =
        static_cast<size_t>(std::find(p.outputs.begin(), p.outputs.end(), t) - p.outputs.begin());
    worst = std::max(worst, rel_l2(*got.at(t->name), *want.at(i)));
  }
  return worst;
}

te::Op matmul(const std::string& name, const Tensor& a, const Tensor& b) {
  int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
  return te::reduce(name, {m, n}, DType::Float32, te::ReduceKind::Sum, {k},
                    [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

schedule::ScheduleConfig small_tile(bool db) {
  return schedule_test::small_gemm_tile(16, 8, 4, db);
}

/// Block barriers inside the K loop (the loop over `ko`).
int barriers_per_k_step(const loop::Kernel& k) {
  int n = -1;
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
    const loop::For* f = s.as<loop::For>();
    if (!f || f->var.as<te::Var>()->name != "ko") return;
    n = 0;
    loop::for_each_stmt(f->body,
                        [&](const loop::Stmt& x) { n += x.as<loop::BlockBarrier>() != nullptr; });
  });
  return n;
}

TEST(Gemm, DoubleBufferedMatchesInterpreterOnEdgeTiles) {
  // 37 x 29 x 19 with BK 4: five K steps, a partial last one, partial row and column tiles.
  Tensor a = te::make_input("A", {37, 19}, DType::Float32);
  Tensor b = te::make_input("B", {19, 29}, DType::Float32);
  te::Op mm = matmul("C", a, b);
  loop::Kernel single = schedule::schedule_op(*mm, small_tile(false));
  loop::Kernel twice = schedule::schedule_op(*mm, small_tile(true));
  EXPECT_EQ(barriers_per_k_step(single), 2);
  EXPECT_EQ(barriers_per_k_step(twice), 1);
  EXPECT_NE(twice.stages[0].schedule.find("double-buffered"), std::string::npos);
  // Two stages of each tile in the shared arena.
  int64_t single_bytes = 0, twice_bytes = 0;
  for (const loop::SharedSlot& s : single.shared) single_bytes += s.bytes;
  for (const loop::SharedSlot& s : twice.shared) twice_bytes += s.bytes;
  EXPECT_EQ(twice_bytes, 2 * single_bytes);
  EXPECT_LE(compare({mm}, single), 1e-6);
  EXPECT_LE(compare({mm}, twice), 1e-6);
}

TEST(Gemm, DoubleBufferedSingleKStep) {
  // K smaller than BK: the loop runs once and never loads a next tile.
  Tensor a = te::make_input("A", {20, 3}, DType::Float32);
  Tensor b = te::make_input("B", {3, 10}, DType::Float32);
  te::Op mm = matmul("C", a, b);
  EXPECT_LE(compare({mm}, schedule::schedule_op(*mm, small_tile(true))), 1e-6);
}

TEST(Gemm, MissingBarrierInDoubleBufferIsARace) {
  // The one barrier per K step is needed: without it a thread overwrites the stage another
  // thread is still reading.
  Tensor a = te::make_input("A", {16, 12}, DType::Float32);
  Tensor b = te::make_input("B", {12, 8}, DType::Float32);
  te::Op mm = matmul("C", a, b);
  loop::Kernel k = schedule::schedule_op(*mm, small_tile(true));
  class DropKBarrier : public loop::StmtMutator {
   protected:
    loop::Stmt mutate_For(const loop::For& f, const loop::Stmt& s) override {
      if (f.var.as<te::Var>()->name != "ko") return loop::StmtMutator::mutate_For(f, s);
      in_k = true;
      loop::Stmt body = mutate(f.body);
      in_k = false;
      return loop::make_for(f.var, f.min, f.extent, f.for_kind, body);
    }
    loop::Stmt mutate_BlockBarrier(const loop::BlockBarrier& b, const loop::Stmt& s) override {
      return in_k ? loop::comment("barrier dropped") : loop::StmtMutator::mutate_BlockBarrier(b, s);
    }
    bool in_k = false;
  };
  loop::Kernel broken = k;
  broken.body = DropKBarrier().mutate(k.body);
  try {
    compare({mm}, broken);
    ADD_FAILURE() << "missing barrier not caught";
  } catch (const emulate::EmulationError& e) {
    EXPECT_NE(std::string(e.what()).find("race"), std::string::npos) << e.what();
  }
}

TEST(Gemm, EpilogueFusedBiasActivationResidualCast) {
  Tensor a = te::make_input("A", {33, 24}, DType::Float32);
  Tensor b = te::make_input("B", {24, 18}, DType::Float32);
  Tensor bias = te::make_input("bias", {18}, DType::Float32);
  Tensor res = te::make_input("res", {33, 18}, DType::Float32);
  te::Op mm = matmul("C", a, b);
  te::Op act = te::compute("D", {33, 18}, DType::Float32, [&](const std::vector<Expr>& i) {
    Expr x = te::read(mm->output, i) + te::read(bias, {i[1]});
    return te::max(x, te::imm(DType::Float32, 0)) + te::tanh(x) * 0.25;
  });
  te::Op add = te::compute("E", {33, 18}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(act->output, i) * 0.5 + te::read(res, i) + te::read(mm->output, i);
  });
  te::Op cast = te::compute("F", {33, 18}, DType::Float64, [&](const std::vector<Expr>& i) {
    return te::cast(DType::Float64, te::read(add->output, i));
  });
  EXPECT_TRUE(schedule::is_epilogue(*mm, {}, *act));
  EXPECT_TRUE(schedule::is_epilogue(*mm, {act.get()}, *add));
  EXPECT_TRUE(schedule::is_epilogue(*mm, {act.get(), add.get()}, *cast));

  for (bool db : {false, true}) {
    // Everything written: each tensor matches.
    loop::Kernel all =
        schedule::schedule_fused(*mm, {act.get(), add.get(), cast.get()}, small_tile(db));
    EXPECT_EQ(all.outputs.size(), 4u);
    EXPECT_LE(
        compare({mm, act, add, cast}, all, {mm->output, act->output, add->output, cast->output}),
        1e-6);
    // Only the last written: the GEMM's result never reaches global memory.
    loop::Kernel kept =
        schedule::schedule_fused(*mm, {act.get(), add.get(), cast.get()}, small_tile(db),
                                 {mm->output, act->output, add->output});
    ASSERT_EQ(kept.outputs.size(), 1u);
    EXPECT_EQ(kept.outputs[0], cast->output);
    EXPECT_EQ(loop::print(kept).find("C["), std::string::npos) << loop::print(kept);
    EXPECT_LE(compare({mm, act, add, cast}, kept), 1e-6);
  }
}

TEST(Gemm, EpilogueRejectsWhatNeedsOtherElements) {
  Tensor a = te::make_input("A", {8, 8}, DType::Float32);
  Tensor b = te::make_input("B", {8, 8}, DType::Float32);
  te::Op mm = matmul("C", a, b);
  te::Op transposed = te::compute("T", {8, 8}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(mm->output, {i[1], i[0]}) + 1.0;
  });
  te::Op shifted = te::compute("S", {8, 8}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::read(mm->output, i) +
           te::read(mm->output, {i[0], te::floormod(i[1] + 1, te::int_imm(8))});
  });
  te::Op rowsum = te::reduce("R", {8}, DType::Float32, te::ReduceKind::Sum, {8},
                             [&](const std::vector<Expr>& i, const std::vector<Expr>& r) {
                               return te::read(mm->output, {i[0], r[0]});
                             });
  te::Op other = te::compute("O", {8, 8}, DType::Float32,
                             [&](const std::vector<Expr>& i) { return te::read(a, i) * 2.0; });
  te::Op smaller = te::compute("P", {8, 4}, DType::Float32,
                               [&](const std::vector<Expr>& i) { return te::read(mm->output, i); });
  EXPECT_FALSE(schedule::is_epilogue(*mm, {}, *transposed));
  EXPECT_FALSE(schedule::is_epilogue(*mm, {}, *shifted));
  EXPECT_FALSE(schedule::is_epilogue(*mm, {}, *rowsum));
  EXPECT_FALSE(schedule::is_epilogue(*mm, {}, *other));
  EXPECT_FALSE(schedule::is_epilogue(*mm, {}, *smaller));
  EXPECT_FALSE(schedule::is_epilogue(*other, {}, *transposed));  // main is not a GEMM
}

const LoadedModel& model(const std::string& name) {
  return test::sample_model(name);
}

int64_t work(const te::ComputeOp& op) {
  int64_t n = 1;
  for (const auto& a : op.axes) n *= a.extent;
  for (const auto& a : op.reduce_axes) n *= a.extent;
  return n;
}

/// The smallest GEMM-like TE of a model from an ONNX op of `op_type` satisfying `accept`.
te::Op pick_gemm(const std::string& name, const std::string& op_type,
                 const std::function<bool(const te::ComputeOp&)>& accept) {
  te::Op best;
  for (const te::Op& op : model(name).program.ops)
    if (op->origin.op_type == op_type && schedule::classify(*op) == ScheduleKind::Gemm &&
        accept(*op) && (!best || work(*op) < work(*best)))
      best = op;
  return best;
}

/// The tuner's best tile for `op` on `gpu`, as a config.
schedule::ScheduleConfig tuned(const te::ComputeOp& op, const std::string& gpu,
                               std::string* why = nullptr) {
  schedule::TuneOptions o;
  o.gpu = gpu::gpu_spec(gpu);
  schedule::TuneResult r = schedule::tune_gemm(op, o);
  EXPECT_TRUE(r.ok());
  if (why) *why = r.reason();
  return schedule::with_tile({}, r.best().tile);
}

TEST(Gemm, TunedBertGemmsMatchInterpreter) {
  int checked = 0;
  for (const te::Op& op : model("bert").program.ops) {
    if (schedule::classify(*op) != ScheduleKind::Gemm || work(*op) > 600000) continue;
    for (const char* g : {"a100", "h100"}) {
      std::string why;
      schedule::ScheduleConfig c = tuned(*op, g, &why);
      std::printf("%s on %s: %s\n", op->name.c_str(), g, why.c_str());
      EXPECT_LE(compare({op}, schedule::schedule_op(*op, c)), 1e-5) << op->name << " " << why;
    }
    if (++checked == 3) break;
  }
  EXPECT_EQ(checked, 3);
}

TEST(Gemm, ConvolutionAsImplicitGemm) {
  // A convolution with a spatial window: its operand indices are affine in output and window.
  auto spatial = [](const te::ComputeOp& op) {
    return schedule::gemm_problem(op).n > 1 && op.reduce_axes.size() >= 3 &&
           op.reduce_axes[1].extent > 1;
  };
  te::Op conv = pick_gemm("resnext", "Conv", spatial);
  if (!conv) conv = pick_gemm("efficientnet", "Conv", spatial);
  ASSERT_TRUE(conv);
  std::printf("conv %s: %zu reduce axes, work %lld\n", conv->name.c_str(), conv->reduce_axes.size(),
              static_cast<long long>(work(*conv)));
  std::string why;
  schedule::ScheduleConfig c = tuned(*conv, "a100", &why);
  std::printf("  tuned: %s\n", why.c_str());
  EXPECT_LE(compare({conv}, schedule::schedule_op(*conv, c)), 1e-5);
  c.gemm_tile.double_buffer = !c.gemm_tile.double_buffer;
  EXPECT_LE(compare({conv}, schedule::schedule_op(*conv, c)), 1e-5);
}

TEST(Gemm, GroupedConvolutionHasABatchAxis) {
  // ResNeXt's grouped 3x3 convolution: the group axis is read by both operands (a batch).
  te::Op conv = pick_gemm("resnext", "Conv", [](const te::ComputeOp& op) {
    schedule::GemmProblem p = schedule::gemm_problem(op);
    return p.batch > 1;
  });
  ASSERT_TRUE(conv);
  schedule::GemmProblem p = schedule::gemm_problem(*conv);
  std::printf("grouped conv %s: batch %lld m %lld n %lld k %lld\n", conv->name.c_str(),
              static_cast<long long>(p.batch), static_cast<long long>(p.m),
              static_cast<long long>(p.n), static_cast<long long>(p.k));
  EXPECT_LE(compare({conv}, schedule::schedule_op(*conv, tuned(*conv, "h100"))), 1e-5);
}

TEST(Gemm, DepthwiseConvolution) {
  // EfficientNet's depthwise convolution: channel is a batch axis, the weight has no column of
  // its own (N = 1), K is the window.
  te::Op conv = pick_gemm("efficientnet", "Conv", [](const te::ComputeOp& op) {
    return schedule::gemm_problem(op).n == 1;
  });
  ASSERT_TRUE(conv);
  schedule::GemmProblem p = schedule::gemm_problem(*conv);
  std::printf("depthwise %s: batch %lld m %lld n %lld k %lld\n", conv->name.c_str(),
              static_cast<long long>(p.batch), static_cast<long long>(p.m),
              static_cast<long long>(p.n), static_cast<long long>(p.k));
  std::string why;
  schedule::ScheduleConfig c = tuned(*conv, "a100", &why);
  std::printf("  tuned: %s\n", why.c_str());
  EXPECT_LE(compare({conv}, schedule::schedule_op(*conv, c)), 1e-5);
}

TEST(Gemm, PlanKernelsKeepGemmResultsOnChip) {
  // BERT's souffle plan: GEMMs followed by bias adds and activations run them in their store
  // loops, and the tuner's choice is recorded in the plan and in the kernel's stage.
  plan::PlanOptions po;
  po.gpu = gpu::gpu_spec("a100");
  plan::FusionPlan p = plan::plan(model("bert").program, po);
  tune_plan(p);
  int recorded = 0;
  for (const plan::Partition& part : p.partitions)
    for (const plan::Stage& st : part.stages)
      for (const plan::TileChoice& t : st.tiles) {
        ++recorded;
        EXPECT_NE(st.schedule.find("tuned: gemm"), std::string::npos);
        EXPECT_FALSE(t.why.empty());
      }
  EXPECT_GT(recorded, 0);
  loop::KernelSet ks = build_plan_kernels(p);
  int fused = 0, tuned_stages = 0;
  for (const loop::Kernel& k : ks.kernels)
    for (const loop::StageInfo& st : k.stages) {
      fused += st.tes.size() > 1;
      tuned_stages += st.schedule.find("tuned: gemm") != std::string::npos;
    }
  EXPECT_GT(fused, 0);
  EXPECT_EQ(tuned_stages, recorded);
}

TEST(Gemm, TunedFusedKernelsCompileWithNvrtc) {
  // The rules plan of MMoE: every GEMM tuned and double-buffered, most with epilogues; plus the
  // hand-built fused kernel. NVRTC compiles them for sm_80 and sm_90 without errors.
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  plan::PlanOptions po;
  po.gpu = gpu::gpu_spec("a100");
  po.strategy = plan::Strategy::Rules;
  loop::KernelSet ks = build_plan_kernels(plan::plan(model("mmoe").program, po));
  Tensor a = te::make_input("A", {33, 24}, DType::Float32);
  Tensor b = te::make_input("B", {24, 18}, DType::Float32);
  te::Op mm = matmul("C", a, b);
  te::Op act = te::compute("D", {33, 18}, DType::Float32, [&](const std::vector<Expr>& i) {
    return te::max(te::read(mm->output, i), te::imm(DType::Float32, 0));
  });
  ks.kernels.push_back(schedule::schedule_fused(*mm, {act.get()}, small_tile(true), {mm->output}));
  std::vector<gpu::CompileJob> jobs;
  for (const char* arch : {"sm_80", "sm_90"}) {
    gpu::CompileJob j;
    j.source = codegen::emit_cuda(ks);
    j.name = "gemm_v2.cu";
    j.options.arch = arch;
    jobs.push_back(j);
  }
  for (const gpu::CompileResult& r : gpu::compile_cuda_many(jobs)) {
    ASSERT_TRUE(r.ok) << r.arch << ": " << r.error.substr(0, 20000);
    EXPECT_EQ(r.kernels.size(), ks.kernels.size()) << r.arch;
  }
}

}  // namespace
}  // namespace souffle
