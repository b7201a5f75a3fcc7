// Source maps: emitted CUDA, loop IR and PTX lines go back to stages, TEs and ONNX nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "core/codegen/codegen_cuda.h"
#include "core/codegen/source_map.h"
#include "core/gpu/nvrtc.h"
#include "core/session/load.h"
#include "kernels.h"

namespace souffle::codegen {
namespace {

using testing::two_stage_kernel;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' ');
  return a == std::string::npos ? std::string() : s.substr(a);
}

/// The 1-based number of the first line containing `needle`, 0 when none does.
int line_with(const std::string& text, const std::string& needle) {
  const std::vector<std::string> ls = lines_of(text);
  for (size_t i = 0; i < ls.size(); ++i)
    if (ls[i].find(needle) != std::string::npos) return static_cast<int>(i) + 1;
  return 0;
}

TEST(SourceMap, CudaStagesCoverTheirCommentsAndBlocks) {
  const loop::Kernel k = two_stage_kernel();
  const std::string src = emit_cuda(k);
  const SourceMap m = emit_cuda_mapped(k).map;
  ASSERT_EQ(m.spans.size(), 2u);

  const int head0 = line_with(src, "// stage 0 `stage0_add`");
  const int store0 = line_with(src, "t[i / 256 * 256 + i % 256] = x[");
  const int sync = line_with(src, "grid.sync();");
  const int head1 = line_with(src, "// stage 1 `stage1_mul`");
  const int atomic = line_with(src, "atomicAdd(&total[0]");
  ASSERT_GT(head0, 0);
  ASSERT_GT(sync, head0);

  EXPECT_EQ(m.spans[0].first_line, head0);
  EXPECT_EQ(m.spans[0].last_line, sync - 1);  // the block's closing brace, not the grid sync
  EXPECT_EQ(m.spans[0].stage, 0);
  EXPECT_EQ(m.spans[0].tes, std::vector<std::string>{"Add_0"});
  EXPECT_EQ(m.spans[0].nodes, std::vector<std::string>{"Add_0"});
  EXPECT_EQ(m.spans[1].first_line, head1);
  EXPECT_EQ(m.spans[1].nodes, std::vector<std::string>{"Mul_1"});
  EXPECT_EQ(lines_of(src)[static_cast<size_t>(m.spans[1].last_line) - 1], "  }");

  ASSERT_NE(m.at_line(store0), nullptr);
  EXPECT_EQ(m.at_line(store0)->stage, 0);
  ASSERT_NE(m.at_line(atomic), nullptr);
  EXPECT_EQ(m.at_line(atomic)->nodes.front(), "Mul_1");
  EXPECT_EQ(m.at_line(sync), nullptr);  // between stages: no node
  EXPECT_EQ(m.at_line(1), nullptr);     // the preamble
  EXPECT_EQ(m.at_line(100000), nullptr);

  const std::vector<int> mul = m.lines_of_node("Mul_1");
  ASSERT_FALSE(mul.empty());
  EXPECT_EQ(mul.front(), head1);
  EXPECT_TRUE(std::find(mul.begin(), mul.end(), atomic) != mul.end());
  EXPECT_TRUE(m.lines_of_node("NoSuchNode").empty());
  EXPECT_EQ(m.spans_of_te("Add_0").size(), 1u);
}

TEST(SourceMap, BarrierBetweenStagesCarriesItsBoundary) {
  loop::Kernel k = two_stage_kernel();
  StageBoundary b;
  b.before = 0;
  b.after = 1;
  b.kind = BoundaryKind::Grid;
  b.reason = BoundaryReason::CrossBlock;
  b.tensor = "t";
  b.producer = 0;
  b.consumer_block = 0;
  b.producer_block = 1;
  b.awaited_tiles = 2;
  b.grid = 4;
  k.boundaries = {b};
  const std::string src = emit_cuda(k);
  const SourceMap m = emit_cuda_mapped(k).map;
  const int sync = line_with(src, "grid.sync();");
  ASSERT_GT(sync, 0);
  // The emitter writes the kind and the reason on the barrier's line; the map finds it.
  EXPECT_EQ(trim(lines_of(src)[static_cast<size_t>(sync) - 1]),
            "grid.sync();  // grid: t of stage 0 read across blocks (block 0 reads what block 1 "
            "wrote; per-tile flags would wait for 2 tiles of 4)");
  ASSERT_EQ(m.boundaries.size(), 1u);
  EXPECT_EQ(m.boundaries[0].line, sync);
  EXPECT_EQ(m.boundary_at(sync), 0);
  EXPECT_EQ(m.boundary_at(sync + 1), -1);
  EXPECT_EQ(m.at_line(sync), nullptr);

  // A record that does not match the barrier (a block boundary) annotates nothing.
  k.boundaries[0].kind = BoundaryKind::Block;
  const std::string plain = emit_cuda(k);
  EXPECT_EQ(trim(lines_of(plain)[static_cast<size_t>(line_with(plain, "grid.sync();")) - 1]),
            "grid.sync();");
  EXPECT_TRUE(emit_cuda_mapped(k).map.boundaries.empty());
}

// The map comes from what the emitter recorded for each line, not from its text: in a rolled
// loop the call stands for the stage of every repetition and the barrier for the boundary of
// every repetition.
TEST(SourceMap, RolledLinesStandForEveryRepetition) {
  loop::Kernel k = testing::row_steps_kernel();
  for (int t = 0; t < 3; ++t) {
    StageBoundary b;
    b.before = t;
    b.after = t + 1;
    b.kind = BoundaryKind::Grid;
    b.reason = BoundaryReason::CrossBlock;
    b.tensor = "y" + std::to_string(t);
    k.boundaries.push_back(b);
  }
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  loop::KernelSet ks;
  ks.kernels = {k};
  const EmittedUnit unit = emit_cuda_unit(ks, o);
  ASSERT_EQ(unit.text(), emit_cuda(k, o));
  const SourceMap m = map_emitted(unit, 0, k);
  const std::string src = unit.text();
  const int call = line_with(src, "(in repetition r of 3: stage 1 + 1r)");
  ASSERT_GT(call, 0) << src;
  std::vector<int> stages_at_call;
  for (const SourceSpan& s : m.spans)
    if (s.first_line == call) stages_at_call.push_back(s.stage);
  std::sort(stages_at_call.begin(), stages_at_call.end());
  EXPECT_EQ(stages_at_call, (std::vector<int>{1, 2, 3}));
  // One grid.sync line in the loop, standing for boundaries 0, 1 and 2.
  const int sync = line_with(src, "grid.sync();");
  ASSERT_GT(sync, 0);
  std::vector<int> boundaries;
  for (const SourceMap::BoundaryLine& b : m.boundaries) {
    EXPECT_EQ(b.line, sync);
    boundaries.push_back(b.boundary);
  }
  EXPECT_EQ(boundaries, (std::vector<int>{0, 1, 2}));
  // Unrolled, each stage has its own call and each boundary its own line.
  o.roll = false;
  const MappedText plain = emit_cuda_mapped(k, o);
  EXPECT_EQ(plain.map.boundaries.size(), 3u);
  std::set<int> lines;
  for (const SourceMap::BoundaryLine& b : plain.map.boundaries) lines.insert(b.line);
  EXPECT_EQ(lines.size(), 3u);
}

TEST(SourceMap, BracesInNodeNamesDoNotConfuseBlocks) {
  loop::Kernel k = two_stage_kernel();
  k.stages[0].origins[0].node = "/blk{0}/Add}";  // exporters allow any character in names
  const std::string src = emit_cuda(k);
  const SourceMap m = emit_cuda_mapped(k).map;
  ASSERT_EQ(m.spans.size(), 2u);
  EXPECT_EQ(m.spans[0].last_line, line_with(src, "grid.sync();") - 1);
  EXPECT_EQ(m.spans[0].nodes, std::vector<std::string>{"/blk{0}/Add}"});
}

TEST(SourceMap, LoopIrHeaderAndStageBlocks) {
  const loop::Kernel k = two_stage_kernel();
  const std::string text = loop::print(k);
  const SourceMap m = map_loop_text(text, k);
  // Each stage: its line in the kernel header, and its block in the body.
  ASSERT_EQ(m.spans.size(), 4u) << text;
  EXPECT_EQ(m.spans[0].stage, 0);
  EXPECT_EQ(m.spans[0].first_line, m.spans[0].last_line);
  EXPECT_EQ(m.spans[1].stage, 1);
  EXPECT_EQ(m.spans[2].stage, 0);
  EXPECT_EQ(m.spans[3].stage, 1);
  const int body0 = line_with(text, "stage 0 {");
  const int barrier = line_with(text, "grid_barrier()");
  EXPECT_EQ(m.spans[2].first_line, body0);
  EXPECT_EQ(m.spans[2].last_line, barrier - 1);
  EXPECT_EQ(m.at_line(barrier), nullptr);
  EXPECT_EQ(m.spans_of_node("Mul_1").size(), 2u);
}

TEST(SourceMap, PtxFollowsLocDirectives) {
  // A hand-written PTX fragment: the CUDA map says lines 10-12 are stage 0, 14-16 stage 1.
  SourceMap cuda;
  SourceSpan a;
  a.first_line = 10;
  a.last_line = 12;
  a.stage = 0;
  a.nodes = {"Add_0"};
  SourceSpan b = a;
  b.first_line = 14;
  b.last_line = 16;
  b.stage = 1;
  b.nodes = {"Mul_1"};
  cuda.spans = {a, b};
  const std::string ptx =
      ".version 8.0\n"                       // 1
      "\t.file\t1 \"/tmp/other.h\"\n"        // 2
      "\t.file\t2 \"kernel_0.cu\"\n"         // 3
      ".visible .entry k(\n"                 // 4
      ")\n"                                  // 5
      "{\n"                                  // 6
      "\t.loc\t2 11 3\n"                     // 7
      "\tld.global.f32 \t%f1, [%rd1];\n"     // 8
      "\tadd.f32 \t%f2, %f1, 0f3F800000;\n"  // 9
      "\t.loc\t1 5 1\n"                      // 10: another file: keeps stage 0
      "\tst.global.f32 \t[%rd2], %f2;\n"     // 11
      "\t.loc\t2 13 1\n"                     // 12: between stages
      "\tbar.sync \t0;\n"                    // 13
      "\t.loc\t2 15 1\n"                     // 14
      "\tmul.f32 \t%f3, %f2, %f2;\n"         // 15
      "\tret;\n"                             // 16
      "}\n";                                 // 17
  const SourceMap m = map_ptx(ptx, cuda, "kernel_0.cu");
  ASSERT_EQ(m.spans.size(), 2u);
  EXPECT_EQ(m.spans[0].first_line, 8);
  EXPECT_EQ(m.spans[0].last_line, 11);
  EXPECT_EQ(m.spans[0].nodes, std::vector<std::string>{"Add_0"});
  EXPECT_EQ(m.at_line(13), nullptr);
  EXPECT_EQ(m.spans[1].first_line, 15);
  EXPECT_EQ(m.spans[1].last_line, 16);
  EXPECT_EQ(m.spans[1].stage, 1);
}

TEST(SourceMap, PtxOfACompiledKernelMapsBackToItsStages) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  const loop::Kernel k = two_stage_kernel();
  const std::string src = emit_cuda(k);
  gpu::CompileOptions o;
  o.arch = "sm_80";
  o.line_info = true;
  const gpu::CompileResult r = gpu::compile_cuda(src, "fused_add_mul.cu", o);
  ASSERT_TRUE(r.ok) << r.error;
  const SourceMap m = map_ptx(r.ptx, emit_cuda_mapped(k).map, "fused_add_mul.cu");
  ASSERT_FALSE(m.spans.empty());
  bool add = false, mul = false;
  for (const SourceSpan& s : m.spans) {
    add |= s.stage == 0;
    mul |= s.stage == 1;
  }
  EXPECT_TRUE(add);
  EXPECT_TRUE(mul);
  // The multiply of stage 1 is in a stage-1 span.
  const std::vector<std::string> ls = lines_of(r.ptx);
  for (size_t i = 0; i < ls.size(); ++i)
    if (ls[i].find("mul.f32") != std::string::npos ||
        ls[i].find("mul.rn.f32") != std::string::npos) {
      const SourceSpan* s = m.at_line(static_cast<int>(i) + 1);
      ASSERT_NE(s, nullptr) << ls[i];
      EXPECT_EQ(s->stage, 1);
    }
}

TEST(SourceMap, TeListingOneSpanPerOp) {
  const LoadedModel model =
      load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe/model.onnx");
  ASSERT_GE(model.program.ops.size(), 3u);
  const MappedText t = te_listing(model.program, {2, 0});
  ASSERT_EQ(t.map.spans.size(), 2u);
  EXPECT_EQ(t.map.spans[0].first_line, 1);
  EXPECT_EQ(t.map.spans[0].tes, std::vector<std::string>{model.program.ops[2]->name});
  EXPECT_EQ(t.map.spans[1].first_line, t.map.spans[0].last_line + 1);
  EXPECT_EQ(t.map.spans[1].nodes, std::vector<std::string>{model.program.ops[0]->origin.node});
  EXPECT_EQ(static_cast<int>(lines_of(t.text).size()), t.map.spans[1].last_line);
  EXPECT_NE(lines_of(t.text)[0].find(model.program.ops[2]->name), std::string::npos);
}

}  // namespace
}  // namespace souffle::codegen
