// Quantized (QDQ) and fp16 models keep their types through the pipeline: the QDQ products
// become integer ops (int8/uint8 operands, int32 accumulation) and the kernels read the
// quantized tensors as 8-bit integers; fp16 tensors stay __half in global memory. The
// numerical checks (TE and kernel level, every strategy) are CTest's model_typed_* tests.
#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "core/session/compile.h"
#include "core/session/load.h"

namespace souffle {
namespace {

std::string typed_model(const std::string& name) {
  return std::string(SOUFFLE_SOURCE_DIR) + "/tests/models/typed/" + name + "/model.onnx";
}

std::vector<CompiledKernel> kernels(const LoadedModel& m,
                                    plan::Strategy s = plan::Strategy::Unfused) {
  plan::PlanOptions po;
  po.strategy = s;
  po.gpu = gpu::gpu_spec("a100");
  plan::FusionPlan p = plan::plan(m.program, po);
  std::vector<CompiledKernel> ks = build_compiled_kernels(p, {});
  emit_compiled_kernels(ks);
  return ks;
}

/// Origin op types of the reductions of the program (its products and sums).
std::multiset<std::string> reductions(const te::TeProgram& p, DType* int_dtype = nullptr) {
  std::multiset<std::string> out;
  for (const te::Op& op : p.ops)
    if (op->reduce != te::ReduceKind::None) {
      out.insert(op->origin.op_type);
      bool integer = op->origin.op_type == "ConvInteger" || op->origin.op_type == "MatMulInteger";
      if (int_dtype && integer) {
        EXPECT_EQ(op->output->dtype, *int_dtype) << op->name;
      }
    }
  return out;
}

TEST(TypedModels, QdqConvAndGemmBecomeIntegerOps) {
  LoadedModel m = load_model(typed_model("int8_cnn"));
  DType i32 = DType::Int32;
  std::multiset<std::string> r = reductions(m.program, &i32);
  EXPECT_EQ(r.count("ConvInteger"), 2u);
  EXPECT_EQ(r.count("MatMulInteger"), 2u);  // the Gemm (transB) and the MatMul
  EXPECT_EQ(r.count("Conv") + r.count("Gemm") + r.count("MatMul"), 0u);
  int integer_gemms = 0;
  for (const CompiledKernel& k : kernels(m)) {
    ASSERT_TRUE(k.ok()) << k.error;
    // The stage comment names the ONNX op of each TE: "<- NODE (ConvInteger)".
    if (k.cuda.find("(ConvInteger)") == std::string::npos &&
        k.cuda.find("(MatMulInteger)") == std::string::npos)
      continue;
    ++integer_gemms;
    // int8 operands from global memory, int32 accumulators and result.
    EXPECT_NE(k.cuda.find("const signed char* __restrict__"), std::string::npos) << k.cuda;
    EXPECT_NE(k.cuda.find("int* __restrict__"), std::string::npos) << k.cuda;
    EXPECT_EQ(k.cuda.find("float"), std::string::npos) << k.cuda;
  }
  EXPECT_EQ(integer_gemms, 4);
}

TEST(TypedModels, Uint8ActivationsWithInt8Weights) {
  LoadedModel m = load_model(typed_model("uint8_mlp"));
  DType i32 = DType::Int32;
  std::multiset<std::string> r = reductions(m.program, &i32);
  EXPECT_EQ(r.count("MatMulInteger"), 2u);
  EXPECT_EQ(r.count("MatMul"), 0u);
  for (const CompiledKernel& k : kernels(m)) {
    if (k.cuda.find("(MatMulInteger)") == std::string::npos) continue;
    EXPECT_NE(k.cuda.find("const unsigned char* __restrict__"), std::string::npos) << k.cuda;
    EXPECT_NE(k.cuda.find("const signed char* __restrict__"), std::string::npos) << k.cuda;
  }
}

std::string c_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return s;
}

TEST(TypedModels, Fp16TensorsStayHalfInGlobalMemory) {
  LoadedModel m = load_model(typed_model("fp16_attention"));
  for (const te::Tensor& t : m.program.inputs) EXPECT_EQ(t->dtype, DType::Float16);
  for (const te::Tensor& t : m.program.outputs) EXPECT_EQ(t->dtype, DType::Float16);
  // The tensors that pass from one ONNX node to another (the model's own values) are f16;
  // f32 tensors are an op's internal stages (a GEMM's accumulator before its cast, softmax's
  // row statistics), read only by TEs of the same node.
  std::map<std::string, const te::ComputeOp*> producer;
  std::map<std::string, std::set<std::string>> reader_nodes;
  for (const te::Op& op : m.program.ops) {
    producer[op->output->name] = op.get();
    std::function<void(const te::Expr&)> visit = [&](const te::Expr& e) {
      if (!e.defined()) return;
      if (const auto* r = e.as<te::Read>()) {
        reader_nodes[r->tensor->name].insert(op->origin.node);
        for (const te::Expr& i : r->indices) visit(i);
      } else if (const auto* u = e.as<te::Unary>()) {
        visit(u->a);
      } else if (const auto* b = e.as<te::Binary>()) {
        visit(b->a);
        visit(b->b);
      } else if (const auto* c = e.as<te::Call>()) {
        for (const te::Expr& a : c->args) visit(a);
      } else if (const auto* sel = e.as<te::Select>()) {
        visit(sel->cond);
        visit(sel->t);
        visit(sel->f);
      } else if (const auto* cast = e.as<te::Cast>()) {
        visit(cast->a);
      }
    };
    visit(op->body);
  }
  std::map<std::string, te::Tensor> by_c_name;
  for (const te::Op& op : m.program.ops) by_c_name[c_name(op->output->name)] = op->output;
  auto internal = [&](const te::Tensor& t) {
    const te::ComputeOp* p = producer.at(t->name);
    const std::set<std::string>& readers = reader_nodes[t->name];
    return readers.size() == 1 && *readers.begin() == p->origin.node;
  };
  for (const auto& [name, t] : by_c_name) {
    if (t->dtype != DType::Float16) {
      EXPECT_TRUE(internal(t)) << name;
    }
  }
  // Each kernel's buffers have their tensors' types: every f16 tensor is a __half buffer, and
  // an f32 buffer is only ever an op's internal stage (fused kernels keep most in registers).
  for (plan::Strategy s :
       {plan::Strategy::Unfused, plan::Strategy::Rules, plan::Strategy::Souffle}) {
    int half_params = 0;
    for (const CompiledKernel& k : kernels(m, s)) {
      ASSERT_TRUE(k.ok()) << k.error;
      for (const auto& [name, t] : by_c_name) {
        bool f16 = k.cuda.find("const __half* __restrict__ " + name + ",") != std::string::npos ||
                   k.cuda.find("__half* __restrict__ " + name + ")") != std::string::npos ||
                   k.cuda.find("__half* __restrict__ " + name + ",") != std::string::npos;
        bool f32 = k.cuda.find("float* __restrict__ " + name + ",") != std::string::npos ||
                   k.cuda.find("float* __restrict__ " + name + ")") != std::string::npos;
        if (f16) {
          ++half_params;
          EXPECT_EQ(t->dtype, DType::Float16) << name;
        }
        if (f32) {
          EXPECT_TRUE(internal(t)) << plan::strategy_name(s) << " " << name;
        }
      }
    }
    EXPECT_GT(half_params, 0) << plan::strategy_name(s);
  }
}

}  // namespace
}  // namespace souffle
