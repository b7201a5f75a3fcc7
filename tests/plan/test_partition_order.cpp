// Kernels in dependency order under every strategy, on a model exported the way Keras and Flax
// models reach ONNX (tests/data/exporters/tf2onnx_layernorm.py): a Reshape (a pure view) read
// element-wise by a Square that fuses into an earlier kernel's epilogue, and through a reduction
// that starts a later one. The view once rode with the later kernel, and the plan's own check
// failed ("... Square (kernel 1) reads .../Reshape of the later kernel 2").
#include <gtest/gtest.h>

#include <string>

#include "core/gpu/spec.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/load.h"
#include "core/session/test_data.h"
#include "core/session/verify_kernels.h"

namespace souffle {
namespace {

const std::string kDir =
    std::string(SOUFFLE_SOURCE_DIR) + "/tests/data/exporters/tf2onnx_layernorm";

TEST(PartitionOrder, Tf2onnxLayerNormPlansAndVerifiesUnderEveryStrategy) {
  LoadedModel m = load_model(kDir + "/model.onnx");
  std::vector<TestDataSet> sets = read_test_data(kDir);
  ASSERT_EQ(sets.size(), 1u);
  for (plan::Strategy s : plan::every_strategy()) {
    SCOPED_TRACE(plan::strategy_name(s));
    plan::PlanOptions po;
    po.strategy = s;
    po.gpu = gpu::gpu_spec("a100");
    po.pricer = schedule::make_pricer(po.gpu, po.precision);
    plan::FusionPlan p = plan::plan(m.program, po);
    EXPECT_NO_THROW(plan::verify(p));
    // Every TE's producers sit in its kernel or an earlier one.
    std::vector<int> kernel_of(p.analysis.tes.size(), -1);
    for (size_t k = 0; k < p.partitions.size(); ++k)
      for (int te : p.partitions[k].tes) kernel_of[te] = int(k);
    for (size_t te = 0; te < p.analysis.tes.size(); ++te)
      for (const auto& in : p.analysis.tes[te].inputs) {
        int pr = p.analysis.tensors[in.tensor].producer;
        if (pr >= 0) {
          EXPECT_LE(kernel_of[pr], kernel_of[te]) << p.analysis.tes[te].name;
        }
      }
    KernelVerifyReport rep = verify_kernels(m, sets, pipeline_options(po), VerifyOptions{});
    EXPECT_TRUE(rep.ok()) << rep.error;
  }
}

}  // namespace
}  // namespace souffle
