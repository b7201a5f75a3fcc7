/// \file Attention heads found in the TEs: the chain scores = Q x K^T, row max, row sum of exp,
/// probabilities, probabilities x V, which the souffle strategy plans as one stage with an online
/// softmax (schedule/attention.cpp) so that the scores never reach global memory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/te/expr.h"
#include "core/te/program_index.h"

namespace souffle::plan {

/// The TEs of one attention head chain, as op indices into a program (ascending).
struct AttentionChain {
  int scores = -1;  ///< S[.., i, j] = sum_d Q[.., i, d] * K[.., d, j] (a contraction)
  int max = -1;     ///< M[.., i, 0] = max_j x(S)[.., i, j]  (x: scale, mask add, bias, ...)
  /// E = exp(x(S) - M) where the vertical transformation kept it a TE of its own (too dear to
  /// recompute in L and P), -1 where it is inlined into them
  int exp = -1;
  int sum = -1;    ///< L[.., i, 0] = sum_j exp(x(S) - M)
  int probs = -1;  ///< P[.., i, j] = exp(x(S) - M) / L
  int out = -1;    ///< O[..] = sum_j P[.., i, j] * V(j, ..)
  /// In program order: S, M, [E,] L, P, O.
  std::vector<int> tes() const {
    return exp >= 0 ? std::vector<int>{scores, max, exp, sum, probs, out}
                    : std::vector<int>{scores, max, sum, probs, out};
  }
  bool contains(int te) const {
    return te >= 0 &&
           (te == scores || te == max || te == exp || te == sum || te == probs || te == out);
  }
  bool operator==(const AttentionChain&) const = default;
};

/// What the fused stage needs of a chain, in the scores' frame: S's axis vars name a row
/// (its batch axes and query axes) and a key (its key axis); S's reduce vars the head dim.
struct AttentionMatch {
  const te::ComputeOp *s = nullptr, *m = nullptr, *l = nullptr, *p = nullptr, *o = nullptr;
  /// The chain's TEs as given (S, M, [E,] L, P, O): l and p above are L and P with E inlined
  /// when the chain has an E, kept alive in `inlined`.
  std::vector<const te::ComputeOp*> ops;
  std::vector<te::Op> inlined;
  int key_axis = -1;               ///< position of the key axis j in S (and P)
  std::vector<te::IterVar> batch;  ///< S's axes read by both factors (heads, windows)
  std::vector<te::IterVar> rows;   ///< S's axes of the query (read by the Q factor only)
  std::vector<te::IterVar> keys;   ///< S's key axis (read by the K factor only)
  te::Expr q, k;                   ///< S's factors: q reads batch, rows, head; k batch, key, head
  /// The score function over S's vars: what the softmax takes (S scaled, masked, biased), with
  /// every read of S at S's own element.
  te::Expr x;
  /// O's other factor in S's frame: reads S's batch vars, its key var (O's reduction) and the
  /// value axes.
  te::Expr v;
  std::vector<te::IterVar> value_axes;  ///< O's axes the P read does not name (value columns)
  std::vector<te::Expr> out_index;      ///< O's element in S's vars and the value axes' vars
  int64_t batch_n = 1, rows_n = 1, keys_n = 1, head_dim = 1, value_dim = 1;
  /// Bytes of the score-shaped tensors the unfused chain writes and reads back (S and P).
  int64_t score_bytes() const;
};

/// Whether s, m, l, p, o form an attention chain the fused stage computes exactly as their TEs
/// do (up to the order of float operations); `why` says what does not fit otherwise. Does not
/// check who else reads the intermediates (see find_attention_chains).
std::optional<AttentionMatch> match_attention(const te::ComputeOp& s, const te::ComputeOp& m,
                                              const te::ComputeOp& l, const te::ComputeOp& p,
                                              const te::ComputeOp& o, std::string* why = nullptr);

/// match_attention over the chain's TEs in program order, S, M, [E,] L, P, O: with an E (five
/// or six ops), L and P are matched with E inlined.
std::optional<AttentionMatch> match_attention_ops(const std::vector<const te::ComputeOp*>& ops,
                                                  std::string* why = nullptr);

/// Every attention chain of `program` (match_attention) whose intermediates S, M, L and P are no
/// model outputs and read by nothing outside the chain (E likewise), in program order.
std::vector<AttentionChain> find_attention_chains(const te::TeProgram& program,
                                                  const te::ProgramIndex& index);

/// The transformation site key of a chain: "attn:" + the name of its output TE.
std::string attention_site_key(const te::TeProgram& program, const AttentionChain& c);

}  // namespace souffle::plan
