#include <gtest/gtest.h>
#include <malloc.h>

#include "core/emulate/emulate.h"
#include "core/loop/stmt.h"
#include "core/loop/verify.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

/// A kernel of `grid` blocks of `block` threads around `inner` (bx, tx bound), writing `out`.
Kernel make_kernel(const std::string& name, int64_t grid, int64_t block, const Expr& bx,
                   const Expr& tx, Stmt inner, std::vector<Tensor> ins, std::vector<Tensor> outs) {
  Kernel k;
  k.name = name;
  k.launch.grid_x = grid;
  k.launch.block_x = block;
  k.inputs = std::move(ins);
  k.outputs = std::move(outs);
  loop::StageInfo st;
  st.name = "stage0";
  k.stages.push_back(st);
  k.body = loop::make_for(bx, grid, ForKind::BlockIdxX,
                          loop::make_for(tx, block, ForKind::ThreadIdxX, loop::stage(0, inner)));
  return k;
}

std::string run_error(const Kernel& k, emulate::Buffers buffers = {}) {
  try {
    emulate::run_kernel(k, buffers);
  } catch (const emulate::EmulationError& e) {
    return e.what();
  }
  return "";
}

TEST(Emulate, BlockReductionThroughSharedMemory) {
  // out[b] = sum of x[b, 0..31] by a shared-memory tree over 32 threads per block.
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor x = te::make_input("x", {3, 32}, DType::Float32);
  Tensor out = te::make_compute_tensor("out", {3}, DType::Float32);
  Tensor sh = loop::make_buffer("sh", {32}, DType::Float32);
  std::vector<Stmt> body = {loop::store(sh, {tx}, te::read(x, {bx, tx})), loop::block_barrier()};
  for (int64_t s = 16; s >= 1; s /= 2) {
    body.push_back(loop::if_then_else(
        te::lt(tx, te::int_imm(s)),
        loop::store(sh, {tx}, te::read(sh, {tx}) + te::read(sh, {tx + te::int_imm(s)}))));
    body.push_back(loop::block_barrier());
  }
  body.push_back(loop::if_then_else(te::eq(tx, te::int_imm(0)),
                                    loop::store(out, {bx}, te::read(sh, {te::int_imm(0)}))));
  Kernel k = make_kernel("reduce", 3, 32, bx, tx,
                         loop::allocate(sh, MemScope::Shared, loop::seq(body)), {x}, {out});
  loop::verify(k);
  auto xd = std::make_shared<TensorData>(DType::Float32, Shape{3, 32});
  for (int64_t i = 0; i < 96; ++i) xd->set_f64(i, static_cast<double>(i));
  emulate::Buffers buf{{"x", xd}};
  emulate::run_kernel(k, buf);
  for (int64_t b = 0; b < 3; ++b) {
    double want = 0;
    for (int64_t t = 0; t < 32; ++t) want += static_cast<double>(b * 32 + t);
    EXPECT_EQ(buf.at("out")->get_f64(b), want);
  }
}

TEST(Emulate, CatchesPlantedSharedRace) {
  // Every thread writes sh[0], then thread 0 reads it: a write-write race without a barrier.
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor out = te::make_compute_tensor("out", {2}, DType::Int64);
  Tensor sh = loop::make_buffer("sh", {1}, DType::Int64);
  Stmt body = loop::allocate(
      sh, MemScope::Shared,
      loop::seq({loop::store(sh, {te::int_imm(0)}, tx), loop::block_barrier(),
                 loop::if_then_else(te::eq(tx, te::int_imm(0)),
                                    loop::store(out, {bx}, te::read(sh, {te::int_imm(0)})))}));
  Kernel k = make_kernel("racy", 2, 8, bx, tx, body, {}, {out});
  loop::verify(k);  // well-formed: the race is a runtime property
  std::string err = run_error(k);
  EXPECT_NE(err.find("data race (write-write) on shared sh[0]"), std::string::npos) << err;
  EXPECT_NE(err.find("kernel racy, stage stage0"), std::string::npos) << err;
}

TEST(Emulate, CatchesReadBeforeBarrier) {
  // Thread t writes sh[t] and reads sh[t+1] with no barrier between: write-read race.
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor out = te::make_compute_tensor("out", {8}, DType::Int64);
  Tensor sh = loop::make_buffer("sh", {9}, DType::Int64);
  Stmt body = loop::allocate(
      sh, MemScope::Shared,
      loop::seq({loop::store(sh, {tx}, tx),
                 loop::if_then_else(te::eq(tx, te::int_imm(7)),
                                    loop::store(sh, {te::int_imm(8)}, te::int_imm(0))),
                 loop::store(out, {tx}, te::read(sh, {tx + te::int_imm(1)}))}));
  std::string err = run_error(make_kernel("stale", 1, 8, bx, tx, body, {}, {out}));
  EXPECT_NE(err.find("data race (write-read) on shared sh[1]"), std::string::npos) << err;
}

TEST(Emulate, CatchesPlantedOutOfBoundsWrite) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor out = te::make_compute_tensor("out", {16}, DType::Float32);
  // Off by one: thread 15 of block 0 writes out[16].
  Stmt body = loop::store(out, {bx * te::int_imm(16) + tx + te::int_imm(1)}, te::float_imm(1.0));
  std::string err = run_error(make_kernel("oob", 1, 16, bx, tx, body, {}, {out}));
  EXPECT_NE(err.find("out-of-bounds store of global out[16] (shape [16]) by block 0 thread 15"),
            std::string::npos)
      << err;
}

TEST(Emulate, CatchesBarrierInDivergentCode) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor out = te::make_compute_tensor("out", {32}, DType::Int64);
  Stmt body = loop::seq({loop::store(out, {tx}, tx),
                         loop::if_then_else(te::lt(tx, te::int_imm(16)), loop::block_barrier())});
  Kernel k = make_kernel("divergent", 1, 32, bx, tx, body, {}, {out});
  EXPECT_THROW(loop::verify(k), InternalError);
  std::string err = run_error(k);
  EXPECT_NE(err.find("block barrier in divergent code: block 0 reaches it with 16 of 32"),
            std::string::npos)
      << err;
}

TEST(Emulate, CatchesReadOfNeverWrittenMemory) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor out = te::make_compute_tensor("out", {8}, DType::Float32);
  Tensor loc = loop::make_buffer("acc", {2}, DType::Float32);
  Stmt body = loop::allocate(loc, MemScope::Local,
                             loop::seq({loop::store(loc, {te::int_imm(0)}, te::float_imm(1.0)),
                                        loop::store(out, {tx}, te::read(loc, {te::int_imm(1)}))}));
  std::string err = run_error(make_kernel("uninit", 1, 8, bx, tx, body, {}, {out}));
  EXPECT_NE(err.find("read of never-written acc[1]"), std::string::npos) << err;
}

TEST(Emulate, CatchesGlobalRaceBetweenThreadsOfOneBlock) {
  // Thread t writes tmp[t] and reads tmp[t ^ 1], a neighbour's element, in global memory with
  // no barrier: one block owns all of tmp, so only a thread-level check sees the race. With a
  // block barrier between, it is ordered.
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor tmp = te::make_compute_tensor("tmp", {8}, DType::Int64);
  Tensor out = te::make_compute_tensor("out", {8}, DType::Int64);
  Expr other = te::select(te::eq(te::floormod(tx, te::int_imm(2)), te::int_imm(0)),
                          tx + te::int_imm(1), tx - te::int_imm(1));
  auto body = [&](bool barrier) {
    std::vector<Stmt> s{loop::store(tmp, {tx}, tx * te::int_imm(10))};
    if (barrier) s.push_back(loop::block_barrier());
    s.push_back(loop::store(out, {tx}, te::read(tmp, {other})));
    return loop::seq(std::move(s));
  };
  Kernel racy = make_kernel("neighbours", 1, 8, bx, tx, body(false), {}, {tmp, out});
  loop::verify(racy);
  const std::string err = run_error(racy);
  EXPECT_NE(err.find("data race (write-read) on global tmp"), std::string::npos) << err;
  EXPECT_NE(err.find("of block 0 without a block barrier"), std::string::npos) << err;
  emulate::Buffers buf;
  emulate::run_kernel(make_kernel("neighbours", 1, 8, bx, tx, body(true), {}, {tmp, out}), buf);
  EXPECT_EQ(buf.at("out")->get_i64(0), 10);
  EXPECT_EQ(buf.at("out")->get_i64(1), 0);
}

TEST(Emulate, AtomicsAndGridBarrier) {
  // Stage 0 zeroes a counter, grid sync, every thread of 4 blocks adds 1, grid sync, block 0
  // thread 0 copies the total out.
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor cnt = te::make_compute_tensor("cnt", {1}, DType::Float32);
  Tensor out = te::make_compute_tensor("out", {1}, DType::Float32);
  Expr zero = te::int_imm(0);
  Expr first = te::logical_and(te::eq(bx, zero), te::eq(tx, zero));
  Stmt body =
      loop::seq({loop::if_then_else(first, loop::store(cnt, {zero}, te::float_imm(0.0))),
                 loop::grid_barrier(), loop::atomic_add(cnt, {zero}, te::float_imm(1.0)),
                 loop::grid_barrier(),
                 loop::if_then_else(first, loop::store(out, {zero}, te::read(cnt, {zero})))});
  Kernel k = make_kernel("atomics", 4, 32, bx, tx, body, {}, {cnt, out});
  k.launch.cooperative = true;
  loop::verify(k);
  emulate::Buffers buf;
  emulate::run_kernel(k, buf);
  EXPECT_EQ(buf.at("out")->get_f64(0), 128.0);
  k.launch.cooperative = false;
  EXPECT_NE(run_error(k).find("grid barrier in a non-cooperative launch"), std::string::npos);
}

/// out[w] = sum of x over warp w's 32 lanes by a butterfly of xor shuffles; also the value
/// lane 31 sees after one down-shuffle by 16 (its own: past the warp's end) and lane 5's by idx.
TEST(Emulate, WarpShufflesExchangeWithinEachWarp) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor x = te::make_input("x", {128}, DType::Float32);
  Tensor out = te::make_compute_tensor("out", {4}, DType::Float32);
  Tensor down = te::make_compute_tensor("down", {128}, DType::Float32);
  Tensor idx = te::make_compute_tensor("idx", {128}, DType::Float32);
  Tensor acc = loop::make_buffer("acc", {1}, DType::Float32);
  Tensor tmp = loop::make_buffer("tmp", {1}, DType::Float32);
  Expr zero = te::int_imm(0), g = bx * te::int_imm(64) + tx;
  Expr acc0 = te::read(acc, {zero}), tmp0 = te::read(tmp, {zero});
  std::vector<Stmt> body = {loop::store(acc, {zero}, te::read(x, {g}))};
  body.push_back(loop::shuffle(tmp, {zero}, acc0, loop::ShuffleKind::Down, te::int_imm(16)));
  body.push_back(loop::store(down, {g}, tmp0));
  body.push_back(loop::shuffle(tmp, {zero}, acc0, loop::ShuffleKind::Idx, te::int_imm(5)));
  body.push_back(loop::store(idx, {g}, tmp0));
  for (int64_t m = 16; m >= 1; m /= 2) {
    body.push_back(loop::shuffle(tmp, {zero}, acc0, loop::ShuffleKind::Xor, te::int_imm(m)));
    body.push_back(loop::store(acc, {zero}, acc0 + tmp0));
  }
  body.push_back(loop::if_then_else(te::eq(te::floormod(tx, te::int_imm(32)), zero),
                                    loop::store(out, {te::floordiv(g, te::int_imm(32))}, acc0)));
  Stmt inner =
      loop::allocate(acc, MemScope::Local, loop::allocate(tmp, MemScope::Local, loop::seq(body)));
  Kernel k = make_kernel("warp_sum", 2, 64, bx, tx, inner, {x}, {out, down, idx});
  loop::verify(k);
  auto xd = std::make_shared<TensorData>(DType::Float32, Shape{128});
  for (int64_t i = 0; i < 128; ++i) xd->set_f64(i, static_cast<double>(i));
  emulate::Buffers buf{{"x", xd}};
  emulate::run_kernel(k, buf);
  for (int64_t w = 0; w < 4; ++w) {
    double want = 0;
    for (int64_t l = 0; l < 32; ++l) want += static_cast<double>(w * 32 + l);
    EXPECT_EQ(buf.at("out")->get_f64(w), want) << "warp " << w;
  }
  EXPECT_EQ(buf.at("down")->get_f64(3), 19.0);    // lane 3 reads lane 19
  EXPECT_EQ(buf.at("down")->get_f64(31), 31.0);   // lane 31 keeps its own
  EXPECT_EQ(buf.at("down")->get_f64(96), 112.0);  // warp 3, lane 0 reads lane 16
  EXPECT_EQ(buf.at("idx")->get_f64(70), 69.0);    // warp 2 broadcasts its lane 5
}

TEST(Emulate, CatchesShuffleInDivergentWarp) {
  // Lanes 0..15 of each warp shuffle while 16..31 skip it: undefined with a full mask.
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor out = te::make_compute_tensor("out", {64}, DType::Float32);
  Tensor tmp = loop::make_buffer("tmp", {1}, DType::Float32);
  Expr zero = te::int_imm(0);
  Stmt body = loop::allocate(
      tmp, MemScope::Local,
      loop::seq(
          {loop::store(out, {tx}, te::float_imm(0.0)),
           loop::if_then_else(te::lt(te::floormod(tx, te::int_imm(32)), te::int_imm(16)),
                              loop::seq({loop::shuffle(tmp, {zero}, te::cast(DType::Float32, tx),
                                                       loop::ShuffleKind::Xor, te::int_imm(1)),
                                         loop::store(out, {tx}, te::read(tmp, {zero}))}))}));
  Kernel k = make_kernel("divergent_shuffle", 1, 64, bx, tx, body, {}, {out});
  loop::verify(k);  // warp divergence depends on values: a runtime property
  std::string err = run_error(k);
  EXPECT_NE(err.find("warp shuffle in divergent code: warp 0 of block 0 reaches it with 16 of 32 "
                     "lanes"),
            std::string::npos)
      << err;
  // A condition that keeps whole warps together is fine.
  Stmt whole = loop::allocate(
      tmp, MemScope::Local,
      loop::seq(
          {loop::store(out, {tx}, te::float_imm(0.0)),
           loop::if_then_else(te::lt(tx, te::int_imm(32)),
                              loop::seq({loop::shuffle(tmp, {zero}, te::cast(DType::Float32, tx),
                                                       loop::ShuffleKind::Xor, te::int_imm(1)),
                                         loop::store(out, {tx}, te::read(tmp, {zero}))}))}));
  emulate::Buffers buf;
  emulate::run_kernel(make_kernel("warp0", 1, 64, bx, tx, whole, {}, {out}), buf);
  EXPECT_EQ(buf.at("out")->get_f64(4), 5.0);
  EXPECT_EQ(buf.at("out")->get_f64(40), 0.0);
}

}  // namespace
}  // namespace souffle

namespace souffle {
namespace {

/// Two stages over a 4 x 8 tile grid: stage 0 block b stores y[b] = x[b] * 2 and releases
/// counter b, stage 1 block b waits on counter `waited(b)` and stores z[b] = y[(b + 1) % 4] + 1
/// (it reads its right neighbour's tile). `sync` "flags" separates the stages by counters,
/// "grid" by a grid barrier. Block `skip` (if any) does not release.
struct FlagKernel {
  Kernel kernel;
  Tensor x, flags;
};
FlagKernel flag_kernel(const std::string& sync, int64_t per_run = 1, int64_t skip = -1,
                       bool wrong_tile = false) {
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor x = te::make_input("x", {4, 8}, DType::Float32);
  Tensor y = te::make_compute_tensor("y", {4, 8}, DType::Float32);
  Tensor z = te::make_compute_tensor("z", {4, 8}, DType::Float32);
  Tensor flags = loop::make_buffer("y_ready", {4}, DType::Int32);
  const Expr four = te::int_imm(4), next = te::floormod(bx + te::int_imm(1), four);
  Kernel k;
  k.name = "two_stage_" + sync;
  k.launch.grid_x = 4;
  k.launch.block_x = 8;
  k.launch.cooperative = true;
  k.inputs = {x};
  k.outputs = {y, z};
  loop::StageInfo s0, s1;
  s0.name = "stage0_scale";
  s1.name = "stage1_shift";
  k.stages = {s0, s1};
  Stmt produce = loop::store(y, {bx, tx}, te::read(x, {bx, tx}) * te::float_imm(2.0f));
  Stmt consume = loop::store(z, {bx, tx}, te::read(y, {next, tx}) + te::float_imm(1.0f));
  Stmt body;
  if (sync == "grid") {
    body = loop::seq({loop::stage(0, produce), loop::grid_barrier(), loop::stage(1, consume)});
  } else {
    k.flags = {flags};
    Stmt release = loop::flag_release(flags, bx, 0);
    if (skip >= 0) release = loop::if_then_else(te::ne(bx, te::int_imm(skip)), release);
    Stmt wait = loop::flag_wait(flags, wrong_tile ? bx : next, te::int_imm(1), per_run);
    body = loop::seq({loop::stage(0, loop::seq({produce, release})),
                      loop::stage(1, loop::seq({wait, consume}))});
  }
  k.body =
      loop::make_for(bx, 4, ForKind::BlockIdxX, loop::make_for(tx, 8, ForKind::ThreadIdxX, body));
  return {k, x, flags};
}

emulate::Buffers flag_inputs() {
  auto x = std::make_shared<TensorData>(DType::Float32, Shape{4, 8});
  for (int64_t i = 0; i < 32; ++i) x->set_f64(i, static_cast<double>(i));
  return {{"x", x}};
}

TEST(EmulateFlags, TwoStageKernelMatchesGridBarrier) {
  FlagKernel grid = flag_kernel("grid"), flags = flag_kernel("flags");
  loop::verify(grid.kernel);
  loop::verify(flags.kernel);
  emulate::Buffers a = flag_inputs(), b = flag_inputs();
  emulate::run_kernel(grid.kernel, a);
  emulate::run_kernel(flags.kernel, b);
  for (int64_t i = 0; i < 32; ++i) {
    EXPECT_EQ(b.at("z")->get_f64(i), a.at("z")->get_f64(i)) << i;
    EXPECT_EQ(b.at("z")->get_f64(i), ((i + 8) % 32) * 2.0 + 1.0) << i;
  }
  for (int64_t t = 0; t < 4; ++t) EXPECT_EQ(b.at("y_ready")->get_i64(t), 1);
  // A second run over the same counters: epoch 2 waits for a count of 2, no reset needed.
  b.erase("y");
  b.erase("z");
  emulate::EmulateOptions second;
  second.flag_epoch = 2;
  emulate::run_kernel(flags.kernel, b, second);
  for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(b.at("z")->get_f64(i), a.at("z")->get_f64(i)) << i;
  for (int64_t t = 0; t < 4; ++t) EXPECT_EQ(b.at("y_ready")->get_i64(t), 2);
  // Run again with the stale epoch: every wait is met by the last run's counts, so nothing
  // orders this run's stores before the neighbours' reads.
  std::string stale;
  try {
    emulate::run_kernel(flags.kernel, b, second);
  } catch (const emulate::EmulationError& e) {
    stale = e.what();
  }
  EXPECT_NE(stale.find("data race (write-read) on global y"), std::string::npos) << stale;
}

TEST(EmulateFlags, MissingReleaseDeadlocksNamingTheBlock) {
  // Block 2 never releases its tile; block 1 reads tile 2 and waits for it forever.
  FlagKernel k = flag_kernel("flags", 1, 2);
  loop::verify(k.kernel);
  emulate::Buffers in = flag_inputs();
  std::string err;
  try {
    emulate::run_kernel(k.kernel, in);
  } catch (const emulate::EmulationError& e) {
    err = e.what();
    EXPECT_EQ(e.kernel(), "two_stage_flags");
    EXPECT_EQ(e.stage(), "stage1_shift");
  }
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("block 1 (stage1_shift) waits for y_ready[2] to reach 1 (it is 0)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("3 of 4 blocks finished"), std::string::npos) << err;
}

TEST(EmulateFlags, WaitOnTheWrongTileIsARace) {
  // Each block waits on its own tile but reads its neighbour's.
  FlagKernel k = flag_kernel("flags", 1, -1, true);
  loop::verify(k.kernel);
  emulate::Buffers in = flag_inputs();
  std::string err;
  try {
    emulate::run_kernel(k.kernel, in);
  } catch (const emulate::EmulationError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("stage stage1_shift: data race (write-read) on global y[1, 0]: blocks 1 "
                     "and 0 without a grid barrier or an awaited flag between"),
            std::string::npos)
      << err;
}

TEST(EmulateFlags, WaitThatCanNeverBeMetIsReported) {
  // Each tile is released once per run, but the waits want two releases.
  FlagKernel k = flag_kernel("flags", 2);
  emulate::Buffers in = flag_inputs();
  std::string err;
  try {
    emulate::run_kernel(k.kernel, in);
  } catch (const emulate::EmulationError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("deadlock: no block can run; block 0 (stage1_shift) waits for y_ready[1] "
                     "to reach 2 (it is 1);"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("0 of 4 blocks finished"), std::string::npos) << err;
}

TEST(Emulate, VarValuesAreFreedWhenTheirLoopEnds) {
  // Each of 400 stages binds a var of its own (a serial loop and a let) over 32 blocks of 256
  // threads: 64 KiB of lane values per var. The emulator keeps those of the bindings it is
  // inside, not of every binding it ran: a kernel of 3,003 stages on 320 blocks otherwise held
  // some 16 GB of them. Heap in use is sampled as each stage starts.
  constexpr int kStages = 400;
  constexpr int64_t kGrid = 32, kBlock = 256;
  Expr bx = te::var("bx"), tx = te::var("tx");
  Tensor out = te::make_compute_tensor("out", {kGrid, kBlock}, DType::Int64);
  std::vector<Stmt> stages;
  for (int s = 0; s < kStages; ++s) {
    Expr j = te::var("j" + std::to_string(s)), v = te::var("v" + std::to_string(s));
    stages.push_back(loop::stage(s, loop::make_for(j, 2, ForKind::Serial,
                                                   loop::let_stmt(v, tx + j + te::int_imm(s),
                                                                  loop::store(out, {bx, tx}, v)))));
  }
  Kernel k;
  k.name = "vars";
  k.launch.grid_x = kGrid;
  k.launch.block_x = kBlock;
  k.outputs = {out};
  for (int s = 0; s < kStages; ++s) {
    loop::StageInfo st;
    st.name = "stage" + std::to_string(s);
    k.stages.push_back(st);
  }
  k.body = loop::make_for(bx, kGrid, ForKind::BlockIdxX,
                          loop::make_for(tx, kBlock, ForKind::ThreadIdxX, loop::seq(stages)));
  loop::verify(k);
  auto in_use = [] {
    struct mallinfo2 m = mallinfo2();
    return static_cast<int64_t>(m.uordblks + m.hblkhd);
  };
  int64_t first = 0, last = 0;
  emulate::EmulateOptions o;
  o.progress = [&](const std::string&, int stage, int) {
    if (stage == 1) first = in_use();
    if (stage == kStages - 1) last = in_use();
  };
  emulate::Buffers buf;
  emulate::run_kernel(k, buf, o);
  for (int64_t b = 0; b < kGrid; ++b)
    EXPECT_EQ(buf.at("out")->get_f64(b * kBlock + 5), 5 + 1 + (kStages - 1));
    // The heap must have been sampled at all: an allocator mallinfo2 does not see (a sanitizer's)
    // reads 0 both times, which would pass below without looking.
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator is not seen by mallinfo2";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's allocator is not seen by mallinfo2";
#endif
#endif
  ASSERT_GT(first, 0) << "the heap was not sampled";
  // 398 stages' vars would be 2 x 398 x 64 KiB (about 50 MB); a few arrays' worth is noise.
  const int64_t per_var = kGrid * kBlock * 8;
  EXPECT_LT(last - first, 8 * per_var) << "heap grew by " << (last - first) << " bytes";
}

}  // namespace
}  // namespace souffle
