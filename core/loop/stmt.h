/// \file Loop IR (kernel IR): immutable statement nodes over TE expressions, kernels and kernel
/// sets.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/support/boundary.h"
#include "core/support/build_choice.h"
#include "core/support/tensor_core_tile.h"
#include "core/te/expr.h"

namespace souffle::loop {

using te::Expr;
using te::Tensor;

/// The one list of statement kinds; it generates the kind enum, the visitor and mutator hooks, the
/// printer and structural equality (forgetting a kind is a compile error there).
#define SOUFFLE_LOOP_STMT_NODES(X) \
  X(For)                           \
  X(LetStmt)                       \
  X(Allocate)                      \
  X(Store)                         \
  X(AtomicAdd)                     \
  X(Shuffle)                       \
  X(IfThenElse)                    \
  X(Seq)                           \
  X(BlockBarrier)                  \
  X(GridBarrier)                   \
  X(FlagRelease)                   \
  X(FlagWait)                      \
  X(Stage)                         \
  X(Evaluate)                      \
  X(Comment)                       \
  X(TimelineRecord)                \
  X(FragmentAlloc)                 \
  X(FragmentFill)                  \
  X(FragmentLoad)                  \
  X(FragmentMma)                   \
  X(FragmentStore)                 \
  X(AsyncCopy)                     \
  X(AsyncCommit)                   \
  X(AsyncWait)                     \
  X(MatrixLoad)                    \
  X(MmaSync)                       \
  X(WgmmaFence)                    \
  X(WgmmaMma)                      \
  X(WgmmaCommit)                   \
  X(WgmmaWait)

enum class StmtKind : uint8_t {
#define SOUFFLE_X(N) N,
  SOUFFLE_LOOP_STMT_NODES(SOUFFLE_X)
#undef SOUFFLE_X
};

/// How a loop runs. Block/thread kinds bind their var to blockIdx/threadIdx: such a loop is not
/// a loop in the emitted code; its extent must equal the kernel's launch configuration.
enum class ForKind : uint8_t { Serial, Unrolled, Vectorized, BlockIdxX, ThreadIdxX };
const char* for_kind_name(ForKind k);  ///< "serial", "unrolled", "vectorized", "blockIdx.x", ...
bool is_thread_binding(ForKind k);     ///< BlockIdxX or ThreadIdxX

/// Where a buffer lives: global (kernel params and intermediates), shared (per block), local
/// (per thread registers).
enum class MemScope : uint8_t { Global, Shared, Local };
const char* scope_name(MemScope s);  ///< "global", "shared", "local"

struct StmtNode;

/// A reference-counted handle to an immutable statement node.
class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> n) : m_node(std::move(n)) {}
  bool defined() const { return m_node != nullptr; }
  const StmtNode* get() const { return m_node.get(); }
  const StmtNode* operator->() const { return m_node.get(); }
  StmtKind kind() const;
  template <typename T>
  const T* as() const;  ///< nullptr when the node is of another kind
  bool same_as(const Stmt& o) const { return m_node == o.m_node; }

 private:
  std::shared_ptr<const StmtNode> m_node;
};

struct StmtNode {
  StmtKind kind;
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
};

/// for (var = min; var < min + extent; ++var) body. `var` is a te::Var (Int64).
struct For : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  Expr var, min, extent;
  ForKind for_kind;
  Stmt body;
  For(Expr v, Expr mn, Expr ext, ForKind k, Stmt b)
      : StmtNode(kKind),
        var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        body(std::move(b)) {}
};
/// Binds var (a te::Var) to value inside body (a const local in the emitted code).
struct LetStmt : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  Expr var, value;
  Stmt body;
  LetStmt(Expr v, Expr val, Stmt b)
      : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};
/// Declares `buffer` (a te::Tensor naming its shape and dtype) in `scope` for the extent of body.
/// Global-scope allocations are kernel-private scratch; params are not allocated.
struct Allocate : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  Tensor buffer;
  MemScope scope;
  Stmt body;
  Allocate(Tensor buf, MemScope s, Stmt b)
      : StmtNode(kKind), buffer(std::move(buf)), scope(s), body(std::move(b)) {}
};
/// buffer[indices...] = value; one Int64 index per dimension of the buffer.
struct Store : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  Tensor buffer;
  std::vector<Expr> indices;
  Expr value;
  Store(Tensor buf, std::vector<Expr> idx, Expr v)
      : StmtNode(kKind), buffer(std::move(buf)), indices(std::move(idx)), value(std::move(v)) {}
};
/// atomicAdd(&buffer[indices...], value) (global or shared buffers).
struct AtomicAdd : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AtomicAdd;
  Tensor buffer;
  std::vector<Expr> indices;
  Expr value;
  AtomicAdd(Tensor buf, std::vector<Expr> idx, Expr v)
      : StmtNode(kKind), buffer(std::move(buf)), indices(std::move(idx)), value(std::move(v)) {}
};
/// Which lane a warp shuffle reads (CUDA's __shfl_*_sync with a full mask over 32 lanes):
/// Xor: lane ^ arg; Down: lane + arg, or the lane itself past the warp's end; Idx: lane arg.
enum class ShuffleKind : uint8_t { Xor, Down, Idx };
const char* shuffle_kind_name(ShuffleKind k);  ///< "xor", "down", "idx"
/// Threads per warp, the width every shuffle exchanges over.
constexpr int64_t kWarpSize = 32;

/// buffer[indices...] = the `value` another lane of this thread's warp computed (see ShuffleKind,
/// `arg` is i64). A statement, not an expression, because all 32 lanes of the warp exchange in
/// lockstep: like a barrier, it must be reached by every lane of a warp together (never in
/// warp-divergent code), and the block must be whole warps.
struct Shuffle : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Shuffle;
  Tensor buffer;
  std::vector<Expr> indices;
  Expr value;
  ShuffleKind shuffle;
  Expr arg;
  Shuffle(Tensor buf, std::vector<Expr> idx, Expr v, ShuffleKind k, Expr a)
      : StmtNode(kKind),
        buffer(std::move(buf)),
        indices(std::move(idx)),
        value(std::move(v)),
        shuffle(k),
        arg(std::move(a)) {}
};
/// if (cond) then_case else else_case; else_case may be undefined.
struct IfThenElse : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  Expr cond;
  Stmt then_case, else_case;
  IfThenElse(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind), cond(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
};
/// Statements in order.
struct Seq : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Seq;
  std::vector<Stmt> stmts;
  explicit Seq(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
};
/// __syncthreads(): every thread of the block must reach it (never in thread-divergent code).
struct BlockBarrier : StmtNode {
  static constexpr StmtKind kKind = StmtKind::BlockBarrier;
  BlockBarrier() : StmtNode(kKind) {}
};
/// cooperative_groups::this_grid().sync(): every thread of the grid; needs a cooperative launch.
struct GridBarrier : StmtNode {
  static constexpr StmtKind kKind = StmtKind::GridBarrier;
  GridBarrier() : StmtNode(kKind) {}
};

// ---- per-tile flags: a finer-grained alternative to a grid barrier ----
//
// A producer block releases the counter of the tile it stored; a consumer block acquire-waits
// only on the counters of the producer tiles it reads, instead of every block of the grid meeting
// at a grid barrier.
//
// Counters live in a global Int32 buffer owned by the kernel (Kernel::flags), zeroed once when
// it is allocated and never reset. Each launch passes a kernel argument `flag_epoch` that grows
// by one per run (1 for the first): a run's releases take a counter from (epoch - 1) * n to
// epoch * n, where n (`per_run`) is how many releases the tile gets in one run, so a wait for
// counter >= epoch * n is met exactly when this run's n releases happened. No launch or memset
// resets counters between runs; a 32-bit counter wraps after 2^31 / n runs.

/// Block-collective: a block barrier, then one thread of the block makes the block's earlier
/// global stores visible (a memory fence) and adds 1 to flags[index] atomically (a release).
/// `stage` is the producing stage (an index into Kernel::stages), for messages.
struct FlagRelease : StmtNode {
  static constexpr StmtKind kKind = StmtKind::FlagRelease;
  Tensor flags;
  Expr index;
  int stage;
  FlagRelease(Tensor f, Expr i, int st)
      : StmtNode(kKind), flags(std::move(f)), index(std::move(i)), stage(st) {}
};
/// Block-collective: one thread of the block spins until every counter flags[first + j],
/// 0 <= j < count, is at least flag_epoch * per_run, then fences (acquire) and the block meets
/// at a block barrier. Every awaited counter must be released by an earlier stage than the one
/// waiting (so waits form no cycle; see the emulator's deadlock check).
struct FlagWait : StmtNode {
  static constexpr StmtKind kKind = StmtKind::FlagWait;
  Tensor flags;
  Expr first, count;
  int64_t per_run;
  FlagWait(Tensor f, Expr fi, Expr c, int64_t n)
      : StmtNode(kKind),
        flags(std::move(f)),
        first(std::move(fi)),
        count(std::move(c)),
        per_run(n) {}
};
/// The statements of one stage of a kernel; `index` points into Kernel::stages (name, origins),
/// so the emitter can comment it and the emulator can name it in errors.
struct Stage : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Stage;
  int index;
  Stmt body;
  Stage(int i, Stmt b) : StmtNode(kKind), index(i), body(std::move(b)) {}
};
/// Evaluates an expression for its effect (none today; kept for intrinsics).
struct Evaluate : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Evaluate;
  Expr value;
  explicit Evaluate(Expr v) : StmtNode(kKind), value(std::move(v)) {}
};
/// A line of explanation carried into the emitted code.
struct Comment : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Comment;
  std::string text;
  explicit Comment(std::string t) : StmtNode(kKind), text(std::move(t)) {}
};

// ---- timeline records (docs/timeline.md; placed by loop/timeline.h) ----

/// What a timeline record marks: a block starting or ending a stage's work, or starting or
/// ending a wait.
enum class TimelineEvent : uint8_t { StageBegin, StageEnd, WaitBegin, WaitEnd };
const char* timeline_event_name(TimelineEvent e);  ///< "stage_begin", "stage_end", ...
/// What a block waits for between WaitBegin and WaitEnd (None for stage records).
enum class TimelineWait : uint8_t { None, BlockBarrier, FlagWait, GridBarrier };
const char* timeline_wait_name(TimelineWait w);  ///< "none", "block_barrier", "flag_wait", ...

/// Block-collective in effect, written by one thread: thread 0 of every block whose index is a
/// multiple of `stride` writes one record (the global timer, the SM's cycle counter, and the SM
/// with the record's tag, see loop/timeline.h) at buffer[block / stride][slot]. `buffer` is the
/// kernel's Int64 timeline buffer of shape [recorded blocks, slots, 3]; `stage` indexes
/// Kernel::stages (for a wait, the stage it comes before).
struct TimelineRecord : StmtNode {
  static constexpr StmtKind kKind = StmtKind::TimelineRecord;
  Tensor buffer;
  TimelineEvent event;
  TimelineWait wait;
  int stage;
  int64_t slot, stride;
  TimelineRecord(Tensor b, TimelineEvent e, TimelineWait w, int st, int64_t sl, int64_t sd)
      : StmtNode(kKind), buffer(std::move(b)), event(e), wait(w), stage(st), slot(sl), stride(sd) {}
};

// ---- warp-level matrix fragments (tensor cores, CUDA's nvcuda::wmma) ----

/// Which operand of D = A x B + C a fragment holds: A is m x k, B is k x n, C and D are m x n.
enum class FragmentRole : uint8_t { MatrixA, MatrixB, Accumulator };
const char* fragment_role_name(FragmentRole r);  ///< "matrix_a", "matrix_b", "accumulator"
/// The element type of a fragment: operands f16, bf16 or tf32 (stored as f32, rounded to a
/// 10-bit mantissa when loaded), accumulators f32.
enum class MmaType : uint8_t { F16, BF16, TF32, F32 };
const char* mma_type_name(MmaType t);  ///< "f16", "bf16", "tf32", "f32"
/// The DType a fragment of this type is loaded from and stored to (tf32 lives in f32).
DType mma_storage_dtype(MmaType t);

/// Declares `buffer` (shape [count], dtype mma_storage_dtype(type)): an array of `count`
/// fragments per warp, each a rows x cols tile of an m x n x k MMA (see FragmentRole), spread
/// over the registers of the warp's 32 lanes. Only the Fragment* statements touch it.
struct FragmentAlloc : StmtNode {
  static constexpr StmtKind kKind = StmtKind::FragmentAlloc;
  Tensor buffer;
  FragmentRole role;
  MmaType type;
  int64_t m, n, k;
  Stmt body;
  FragmentAlloc(Tensor buf, FragmentRole r, MmaType t, int64_t mm, int64_t nn, int64_t kk, Stmt b)
      : StmtNode(kKind),
        buffer(std::move(buf)),
        role(r),
        type(t),
        m(mm),
        n(nn),
        k(kk),
        body(std::move(b)) {}
  int64_t rows() const { return role == FragmentRole::MatrixB ? k : m; }
  int64_t cols() const { return role == FragmentRole::MatrixA ? k : n; }
};
/// fragment[index] = value everywhere (wmma::fill_fragment). Like every Fragment* statement it
/// is warp-collective: all 32 lanes of a warp execute it together with the same operands, never
/// in thread-divergent code, and blocks are whole warps.
struct FragmentFill : StmtNode {
  static constexpr StmtKind kKind = StmtKind::FragmentFill;
  Tensor fragment;
  Expr index, value;
  FragmentFill(Tensor f, Expr i, Expr v)
      : StmtNode(kKind), fragment(std::move(f)), index(std::move(i)), value(std::move(v)) {}
};
/// fragment[index] = the rows x cols tile of `source` (row-major, shared or global) whose
/// top-left element is source[origin...] (wmma::load_matrix_sync; the leading dimension is the
/// source's last extent; the tile's address must be 32-byte aligned).
struct FragmentLoad : StmtNode {
  static constexpr StmtKind kKind = StmtKind::FragmentLoad;
  Tensor fragment;
  Expr index;
  Tensor source;
  std::vector<Expr> origin;
  FragmentLoad(Tensor f, Expr i, Tensor src, std::vector<Expr> o)
      : StmtNode(kKind),
        fragment(std::move(f)),
        index(std::move(i)),
        source(std::move(src)),
        origin(std::move(o)) {}
};
/// d[di] = a[ai] x b[bi] + c[ci] (wmma::mma_sync): products and sums in f32.
struct FragmentMma : StmtNode {
  static constexpr StmtKind kKind = StmtKind::FragmentMma;
  Tensor d, a, b, c;
  Expr di, ai, bi, ci;
  FragmentMma(Tensor d_, Expr di_, Tensor a_, Expr ai_, Tensor b_, Expr bi_, Tensor c_, Expr ci_)
      : StmtNode(kKind),
        d(std::move(d_)),
        a(std::move(a_)),
        b(std::move(b_)),
        c(std::move(c_)),
        di(std::move(di_)),
        ai(std::move(ai_)),
        bi(std::move(bi_)),
        ci(std::move(ci_)) {}
};
/// The m x n accumulator fragment[index] written row-major into `dest` (shared or global, f32)
/// from dest[origin...] on (wmma::store_matrix_sync; leading dimension and alignment as for
/// FragmentLoad).
struct FragmentStore : StmtNode {
  static constexpr StmtKind kKind = StmtKind::FragmentStore;
  Tensor dest;
  std::vector<Expr> origin;
  Tensor fragment;
  Expr index;
  FragmentStore(Tensor d, std::vector<Expr> o, Tensor f, Expr i)
      : StmtNode(kKind),
        dest(std::move(d)),
        origin(std::move(o)),
        fragment(std::move(f)),
        index(std::move(i)) {}
};

// ---- Ampere-class warp MMA: asynchronous copies, ldmatrix, mma.sync (PTX ISA) ----
//
// Unlike the Fragment* statements (wmma, opaque fragments), these name per-lane registers: a
// Local buffer of each thread holds its lane's elements of an mma.sync operand in the order the
// PTX ISA lays them out, so a template can compute with them (epilogues from registers) and the
// emulator checks the layouts exactly. See docs/mainloop.md.

/// cp.async.{ca,cg}.shared.global: `bytes` (4, 8 or 16) copied from global src[src_index...]
/// (that element and the next ones of the flattened buffer) to shared dst[dst_index...] (and the
/// next ones), both addresses aligned to `bytes`, one dtype. The copy is asynchronous: it joins
/// this thread's open group, AsyncCommit closes the group, and the shared elements are written
/// only when an AsyncWait completes that group; a read of them before that reads what was there
/// before. With `pred` defined (i64 0/1) and false, zeros are written and src is not read (the
/// src-size 0 form).
struct AsyncCopy : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AsyncCopy;
  Tensor dst;
  std::vector<Expr> dst_index;
  Tensor src;
  std::vector<Expr> src_index;
  int64_t bytes;
  Expr pred;
  AsyncCopy(Tensor d, std::vector<Expr> di, Tensor s, std::vector<Expr> si, int64_t b, Expr p)
      : StmtNode(kKind),
        dst(std::move(d)),
        dst_index(std::move(di)),
        src(std::move(s)),
        src_index(std::move(si)),
        bytes(b),
        pred(std::move(p)) {}
  int64_t elements() const { return bytes / dtype_size(dst->dtype); }
};
/// cp.async.commit_group: the thread's copies issued since the last commit form one group.
struct AsyncCommit : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AsyncCommit;
  AsyncCommit() : StmtNode(kKind) {}
};
/// cp.async.wait_group N: waits until at most `pending` of the thread's committed groups are
/// still in flight (the oldest complete first). Other threads' copies need a block barrier after.
struct AsyncWait : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AsyncWait;
  int64_t pending;
  explicit AsyncWait(int64_t n) : StmtNode(kKind), pending(n) {}
};
/// ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16 (warp-collective): lane 8i + r gives
/// the address src[src_index...] of row r of 8x8 matrix i (16 bytes: 8 16-bit or 4 32-bit
/// elements); lane l receives of matrix i the elements (row l/4, columns 2(l%4), 2(l%4)+1), or
/// with `trans` (16-bit only) (rows 2(l%4), 2(l%4)+1, column l/4), into
/// dst[dst_offset + 2i], dst[dst_offset + 2i + 1] (32-bit elements: the one element (row l/4,
/// column l%4) into dst[dst_offset + i]). dst is a Local buffer of src's dtype; dst_offset is
/// the same in every lane.
struct MatrixLoad : StmtNode {
  static constexpr StmtKind kKind = StmtKind::MatrixLoad;
  Tensor dst;
  Expr dst_offset;
  int64_t count;
  bool trans;
  Tensor src;
  std::vector<Expr> src_index;
  MatrixLoad(Tensor d, Expr o, int64_t c, bool t, Tensor s, std::vector<Expr> si)
      : StmtNode(kKind),
        dst(std::move(d)),
        dst_offset(std::move(o)),
        count(c),
        trans(t),
        src(std::move(s)),
        src_index(std::move(si)) {}
};
/// mma.sync.aligned (warp-collective): m16n8k16 for f16/bf16, m16n8k8 for tf32 (operands held
/// as f32, rounded to tf32 as cvt.rna does), f32 accumulation: D = A x B + C where each lane
/// holds its registers at a[a_offset..], b[b_offset..], c[c_offset..], d[d_offset..] (Local
/// buffers; offsets the same in every lane) in the PTX ISA's fragment layout (mma_sync_elements
/// per lane). With g = lane/4, t = lane%4: f16/bf16 A element i at (row g + 8((i/2)%2), col
/// 2t + i%2 + 8(i/4)), B element i at (row 2t + i%2 + 8(i/2), col g); tf32 A element i at
/// (row g + 8(i%2), col t + 4(i/2)), B element i at (row t + 4i, col g); C and D element i at
/// (row g + 8(i/2), col 2t + i%2).
struct MmaSync : StmtNode {
  static constexpr StmtKind kKind = StmtKind::MmaSync;
  MmaType type;
  Tensor d, a, b, c;
  Expr d_offset, a_offset, b_offset, c_offset;
  MmaSync(MmaType t, Tensor d_, Expr do_, Tensor a_, Expr ao, Tensor b_, Expr bo, Tensor c_,
          Expr co)
      : StmtNode(kKind),
        type(t),
        d(std::move(d_)),
        a(std::move(a_)),
        b(std::move(b_)),
        c(std::move(c_)),
        d_offset(std::move(do_)),
        a_offset(std::move(ao)),
        b_offset(std::move(bo)),
        c_offset(std::move(co)) {}
};
// ---- Hopper warpgroup MMA (wgmma, sm_90a), operands from shared memory by descriptors ----

/// wgmma.fence.sync.aligned (warpgroup-collective): orders this warpgroup's earlier register
/// accesses before the following WgmmaMma. The emulator requires one before a WgmmaMma, after
/// the start and after every WgmmaWait (stricter than the PTX ISA, which asks for it only where
/// registers an in-flight wgmma uses were touched). See docs/mainloop.md.
struct WgmmaFence : StmtNode {
  static constexpr StmtKind kKind = StmtKind::WgmmaFence;
  WgmmaFence() : StmtNode(kKind) {}
};
/// wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16,bf16} (warpgroup-collective: 128 threads,
/// the four warps of one aligned warpgroup): D = A x B (+ D when `accumulate`), asynchronous.
/// A (64 x 16) and B (16 x n) are read from shared memory through matrix descriptors without
/// swizzle, both K-major: the descriptor's start is the address of a[a_index...] (b[b_index...]),
/// 16-byte aligned, and element (row r, k) of A (B: (k, column c), r := c) lies at byte
///   start + (r / 8) * sbo + (k / 8) * lbo + (r % 8) * 16 + (k % 8) * 2
/// (8 x 8 core matrices of 128 contiguous bytes; lbo steps along K, sbo along M or N; both
/// multiples of 16 below 2^18). D is n/2 f32 registers per thread at d[d_offset..] (a Local
/// buffer, offset the same in every thread): thread 32w + l (w the warp in the warpgroup, g =
/// l/4, t = l%4) holds element i at (row 16w + g + 8((i/2)%2), column 8(i/4) + 2t + i%2). The
/// result lands in the registers only when a WgmmaWait completes the WgmmaCommit group that
/// holds it; wgmmas of one group chain on the same accumulators.
struct WgmmaMma : StmtNode {
  static constexpr StmtKind kKind = StmtKind::WgmmaMma;
  MmaType type;
  int64_t n;
  Tensor d;
  Expr d_offset;
  Tensor a;
  std::vector<Expr> a_index;
  int64_t a_lbo, a_sbo;
  Tensor b;
  std::vector<Expr> b_index;
  int64_t b_lbo, b_sbo;
  bool accumulate;
  WgmmaMma(MmaType t, int64_t n_, Tensor d_, Expr dof, Tensor a_, std::vector<Expr> ai, int64_t al,
           int64_t as, Tensor b_, std::vector<Expr> bi, int64_t bl, int64_t bs, bool acc)
      : StmtNode(kKind),
        type(t),
        n(n_),
        d(std::move(d_)),
        d_offset(std::move(dof)),
        a(std::move(a_)),
        a_index(std::move(ai)),
        a_lbo(al),
        a_sbo(as),
        b(std::move(b_)),
        b_index(std::move(bi)),
        b_lbo(bl),
        b_sbo(bs),
        accumulate(acc) {}
};
/// wgmma.commit_group.sync.aligned: the warpgroup's wgmmas issued since the last commit form
/// one group.
struct WgmmaCommit : StmtNode {
  static constexpr StmtKind kKind = StmtKind::WgmmaCommit;
  WgmmaCommit() : StmtNode(kKind) {}
};
/// wgmma.wait_group.sync.aligned N: waits until at most `pending` committed groups are in
/// flight; their accumulators are written then.
struct WgmmaWait : StmtNode {
  static constexpr StmtKind kKind = StmtKind::WgmmaWait;
  int64_t pending;
  explicit WgmmaWait(int64_t p) : StmtNode(kKind), pending(p) {}
};
/// k of the mma.sync shape of `type` (16 for f16/bf16, 8 for tf32); m is 16 and n 8.
int64_t mma_sync_k(MmaType type);
/// Elements per lane of an mma.sync operand: A 8 (f16/bf16) or 4 (tf32), B 4 or 2, C/D 4.
int64_t mma_sync_elements(MmaType type, FragmentRole role);

inline StmtKind Stmt::kind() const {
  return m_node->kind;
}
template <typename T>
const T* Stmt::as() const {
  return m_node && m_node->kind == T::kKind ? static_cast<const T*>(m_node.get()) : nullptr;
}

// ---- validating constructors (throw InternalError on ill-formed input) ----
Stmt make_for(Expr var, Expr min, Expr extent, ForKind kind, Stmt body);
Stmt make_for(Expr var, int64_t extent, ForKind kind, Stmt body);  ///< min 0
Stmt let_stmt(Expr var, Expr value, Stmt body);
Stmt allocate(Tensor buffer, MemScope scope, Stmt body);
Stmt store(Tensor buffer, std::vector<Expr> indices, Expr value);
Stmt atomic_add(Tensor buffer, std::vector<Expr> indices, Expr value);
/// buffer[indices] = value of the lane `kind`/`arg` select (see Shuffle).
Stmt shuffle(Tensor buffer, std::vector<Expr> indices, Expr value, ShuffleKind kind, Expr arg);
Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case = {});
/// Flattens nested Seqs and drops undefined statements; a single statement is returned as is.
Stmt seq(std::vector<Stmt> stmts);
Stmt block_barrier();
Stmt grid_barrier();
/// See FlagRelease; flags is an Int32 buffer of rank 1.
Stmt flag_release(Tensor flags, Expr index, int stage);
/// See FlagWait; count >= 1 tiles from first, per_run >= 1.
Stmt flag_wait(Tensor flags, Expr first, Expr count, int64_t per_run);
Stmt stage(int index, Stmt body);
Stmt evaluate(Expr value);
Stmt comment(std::string text);
/// See TimelineRecord; buffer is Int64 [rows, slots, 3], 0 <= slot < slots, stride >= 1.
Stmt timeline_record(Tensor buffer, TimelineEvent event, TimelineWait wait, int stage, int64_t slot,
                     int64_t stride);
/// Declares `buffer` (from make_fragment_buffer) as fragments for the extent of body.
Stmt fragment_alloc(Tensor buffer, FragmentRole role, MmaType type, int64_t m, int64_t n, int64_t k,
                    Stmt body);
/// The buffer of an array of `count` fragments of `type`.
Tensor make_fragment_buffer(std::string name, int64_t count, MmaType type);
Stmt fragment_fill(Tensor fragment, Expr index, Expr value);
Stmt fragment_load(Tensor fragment, Expr index, Tensor source, std::vector<Expr> origin);
Stmt fragment_mma(Tensor d, Expr di, Tensor a, Expr ai, Tensor b, Expr bi, Tensor c, Expr ci);
Stmt fragment_store(Tensor dest, std::vector<Expr> origin, Tensor fragment, Expr index);
/// See AsyncCopy; `pred` may be undefined (always copy).
Stmt async_copy(Tensor dst, std::vector<Expr> dst_index, Tensor src, std::vector<Expr> src_index,
                int64_t bytes, Expr pred = {});
Stmt async_commit();
Stmt async_wait(int64_t pending);
/// See MatrixLoad.
Stmt matrix_load(Tensor dst, Expr dst_offset, int64_t count, bool trans, Tensor src,
                 std::vector<Expr> src_index);
/// See MmaSync.
Stmt mma_sync(MmaType type, Tensor d, Expr d_offset, Tensor a, Expr a_offset, Tensor b,
              Expr b_offset, Tensor c, Expr c_offset);
/// See WgmmaFence, WgmmaMma, WgmmaCommit, WgmmaWait.
Stmt wgmma_fence();
Stmt wgmma_mma(MmaType type, int64_t n, Tensor d, Expr d_offset, Tensor a,
               std::vector<Expr> a_index, int64_t a_lbo, int64_t a_sbo, Tensor b,
               std::vector<Expr> b_index, int64_t b_lbo, int64_t b_sbo, bool accumulate);
Stmt wgmma_commit();
Stmt wgmma_wait(int64_t pending);
/// The MMA shapes tensor cores take through wmma: m16n16k16 for f16/bf16, m16n16k8 for tf32.
bool is_supported_mma_shape(MmaType operand, int64_t m, int64_t n, int64_t k);

/// A buffer that is not a model tensor (shared tiles, register accumulators, scratch).
Tensor make_buffer(std::string name, Shape shape, DType dtype);

// ---- kernels ----

struct LaunchConfig {
  int64_t grid_x = 1;
  int64_t block_x = 1;
  int64_t dynamic_shared_bytes = 0;  ///< the shared arena (see plan_shared_arena)
  bool cooperative = false;          ///< launched with cudaLaunchCooperativeKernel (grid barriers)
};

/// One stage of a kernel: the TEs it computes and the ONNX nodes they came from.
struct StageInfo {
  std::string name;                 ///< "stage0_matmul"
  std::string schedule;             ///< "injective", "reduction", "gemm 64x64x16 tile 4x4"
  std::vector<std::string> tes;     ///< TE (ComputeOp) names
  std::vector<te::Origin> origins;  ///< ONNX node and op type per TE
  int64_t grid_x = 1, block_x = 1;  ///< what the stage itself needs
  /// The first block the stage runs on in its merged kernel (blocks block_offset ..
  /// block_offset + grid_x - 1): stages packed side by side (schedule/wavefront.h) take
  /// disjoint ranges.
  int64_t block_offset = 0;
  /// Stages of one wave (>= 0) run side by side on disjoint blocks between the same barriers,
  /// none depending on another; -1: not packed (the stage runs alone on its blocks).
  int wave = -1;
  /// The shared buffer its GEMM reads its weights from for the whole kernel (a weight panel,
  /// schedule/weight_panel.h), "" for none; whether this stage loads it (else an earlier stage
  /// on its blocks did).
  std::string weight_panel{};
  bool weight_panel_load = false;
  /// The priced choices the builder made for the kernel (flags or grid barriers, weight panels
  /// or streaming, waves or program order), in the order made; on its first stage only. The
  /// stage's schedule text tells each (schedule::describe).
  std::vector<BuildChoice> choices{};
  /// The tensor-core tile its GEMM template built it with (kind None for other stages); the
  /// pricer reads the template's register need here, not from the schedule text.
  TensorCoreTile tensor_core{};
};

/// Where one shared buffer sits in the kernel's shared arena.
struct SharedSlot {
  Tensor buffer;
  int64_t offset = 0;  ///< bytes from the start of the arena
  int64_t bytes = 0;
};

/// One loop-IR function plus its launch configuration.
struct Kernel {
  std::string name;
  std::vector<Tensor> inputs;   ///< global tensors read (model inputs, constants, intermediates)
  std::vector<Tensor> outputs;  ///< global tensors written
  Stmt body;
  LaunchConfig launch;
  std::vector<StageInfo> stages;
  std::vector<SharedSlot> shared;  ///< filled by plan_shared_arena
  /// Per-tile counters the kernel's FlagRelease / FlagWait use (Int32, rank 1): owned by the
  /// kernel, zeroed once, never reset; each launch passes `flag_epoch` (see FlagRelease).
  std::vector<Tensor> flags;
  /// Constant tables the kernel's own bookkeeping reads (the blocks each flag wait awaits, the
  /// first block of each stage packed beside others): inputs of the kernel, but no stage's
  /// traffic.
  std::vector<Tensor> tables;
  /// What orders each stage after the ones before, in body order: one entry per stage after the
  /// first, one per barrier between phases of a stage, and a Launch entry first for a launch
  /// that follows another of its partition. Every barrier statement outside the Stage nodes
  /// has its entry (has_statement), in the same order.
  std::vector<StageBoundary> boundaries;
};

/// A model's kernels in launch order over global tensors.
struct KernelSet {
  std::string name;
  std::vector<Tensor> inputs;   ///< model inputs
  std::vector<Tensor> outputs;  ///< model outputs
  std::vector<Kernel> kernels;
};

// ---- printing (stable text; tests compare it) ----
std::string print(const Stmt& s);
std::string print(const Kernel& k);
std::string print(const KernelSet& ks);

}  // namespace souffle::loop
