// Lesson questions: each one asks about a decision this model's pipeline made and answers it
// from the walk's own records (transform sites, kernels' reasons, stage boundaries), so a
// lesson on another model asks about that model's choices.
#include "core/report/lesson.h"

#include <fmt/format.h>

#include <algorithm>

#include <set>

#include "core/report/memory_picture.h"
#include "core/report/svg.h"
#include "core/session/memory_record.h"
#include "core/support/fault.h"
#include "core/support/line_diff.h"
#include "core/te/mutator.h"

namespace souffle::report {

std::vector<LessonQuestion> lesson_questions(const PipelineStep& s, const PipelineWalk& walk) {
  std::vector<LessonQuestion> q;
  const plan::FusionPlan& p = walk.result.plan;
  if (s.name == "fold") {
    if (s.sites.empty()) {
      q.push_back({"Nothing was folded here. When does constant folding remove nodes?",
                   "When a node's inputs are all known before the model runs (weights, shapes, "
                   "constants): its output is computed once by the compiler and the node "
                   "disappears. This model has no such node."});
    } else {
      const StepSite* pick = &s.sites.front();  // a computed node says more than a Constant
      for (const StepSite& site : s.sites)
        if (site.label.rfind("Constant ", 0) != 0) {
          pick = &site;
          break;
        }
      const StepSite& f = *pick;
      q.push_back({fmt::format("Why can {} be removed before the model ever runs?", f.label),
                   "Because " + f.reason +
                       ". Folding computes once, at compile time, what depends only on "
                       "constants and declared sizes (shape arithmetic: Shape, Gather, Concat "
                       "on shapes), and drops what nothing reads; the GPU never launches "
                       "anything for either."});
    }
  } else if (s.name == "lower") {
    q.push_back({"Why can one ONNX node become several tensor expressions?",
                 s.sentence +
                     " A tensor expression computes one output tensor from its inputs with one "
                     "loop nest; an operator such as Softmax or LayerNormalization needs several "
                     "passes (a maximum, a sum, a division), each its own TE."});
  } else if (s.name == "analyze") {
    q.push_back({"Why does the compiler sort TEs into compute- and memory-intensive ones?",
                 s.sentence +
                     " A compute-intensive TE (a GEMM, a convolution) does many operations per "
                     "byte it loads and is scheduled in tiles kept in shared memory; a "
                     "memory-intensive one is bound by DRAM traffic, so the most it gains from "
                     "is never writing its result to DRAM: being fused into its neighbours."});
  } else if (s.name == "horizontal") {
    if (!s.sites.empty()) {
      const StepSite& h = s.sites.front();
      q.push_back({fmt::format("Why merge {}?", h.label),
                   fmt::format("They are independent and read one input ({}): one launch of the "
                               "merged TE loads that input once for all of them and keeps more "
                               "blocks busy than each alone.",
                               h.reason)});
    } else {
      q.push_back({"Nothing was merged. What would horizontal fusion need?",
                   "Independent TEs of the same shape and reduction that read one common input, "
                   "as the query, key and value projections of attention do."});
    }
  } else if (s.name == "vertical") {
    if (!s.sites.empty()) {
      const StepSite& v = s.sites.front();
      q.push_back({fmt::format("What does {} save?", v.label),
                   fmt::format("The producer's result is computed where the consumer reads it, "
                               "so that tensor is never written to memory and read back ({}).",
                               v.reason)});
    }
  } else if (s.name == "partition") {
    for (const plan::Partition& k : p.partitions) {
      const plan::Decision* priced = nullptr;
      for (const plan::Decision& d : k.decisions)
        if (d.merged_us > 0 && d.split_us > 0 && d.te >= 0 &&
            static_cast<size_t>(d.te) < p.program.ops.size()) {
          priced = &d;
          break;
        }
      if (!priced) continue;
      const std::string& te = p.program.ops[static_cast<size_t>(priced->te)]->name;
      q.push_back({fmt::format("Kernel {}: why did the partitioner decide \"{}\" at {}?", k.id,
                               plan::decision_kind_name(priced->kind), te),
                   fmt::format("It priced both ways with the kernels actually built: {:.2f} us "
                               "with it merged, {:.2f} us apart. In its words: {}.",
                               priced->merged_us, priced->split_us, priced->reason)});
      break;
    }
    if (p.partitions.size() == 1)
      q.push_back({"How can the whole model run as one kernel?",
                   "Its stages are ordered inside the kernel by barriers instead of by kernel "
                   "launches: where a stage reads what other blocks wrote, every block waits at "
                   "a grid barrier, which works because all the kernel's blocks are resident on "
                   "the GPU at once (a cooperative launch). Priced, that was cheaper than "
                   "launching several kernels."});
    else
      q.push_back({fmt::format("Why {} kernels and not one?", p.partitions.size()),
                   "A kernel ends where joining the next TEs would cost more than launching "
                   "another kernel (the prices compared above), or where its blocks would not "
                   "all fit on the GPU at once, which a grid barrier needs."});
  } else if (s.name == "build kernels") {
    const StepSite* grid = nullptr;
    const StepSite* block = nullptr;
    for (const StepSite& b : s.sites) {
      if (!grid && b.label.rfind("grid", 0) == 0) grid = &b;
      if (!block && b.label.rfind("block", 0) == 0) block = &b;
    }
    if (grid)
      q.push_back({fmt::format("Why does this boundary need a grid barrier: {}?", grid->label),
                   "Because a block of the later stage reads what other blocks of the earlier "
                   "stage wrote: " +
                       grid->reason +
                       ". A block barrier (__syncthreads) only orders the threads of one block; "
                       "every block of the grid must have finished writing before any reads, so "
                       "the whole grid waits (grid.sync()), which needs all blocks resident at "
                       "once."});
    if (block)
      q.push_back({fmt::format("Why is a block barrier enough at: {}?", block->label),
                   "Each block reads only what it wrote itself: " + block->reason +
                       ". No other block's data is needed, so the threads of the block wait "
                       "for each other and nothing else."});
  } else if (s.name == "emit") {
    const size_t syncs = [&] {
      size_t n = 0, at = 0;
      while ((at = s.after.find("grid.sync()", at)) != std::string::npos) ++n, ++at;
      return n;
    }();
    q.push_back({"Where does the grid barrier appear in the CUDA C?",
                 syncs == 0 ? std::string("This kernel has none: each stage reads only what its "
                                          "own block wrote, or it is one stage.")
                            : fmt::format("As grid.sync() ({} in the text): a cooperative launch "
                                          "lets every block of the grid wait there.",
                                          syncs)});
  }
  return q;
}

std::string diff_pair_html(const std::string& before, const std::string& after, size_t max_lines) {
  const std::vector<std::string_view> a = split_lines(before), b = split_lines(after);
  const LineDiff d = diff_lines(a, b);
  const bool mark = d.exact && d.common > 0 && d.common * 5 >= std::min(a.size(), b.size());
  auto block = [&](const std::vector<std::string_view>& lines, const std::vector<bool>& marked,
                   const char* cls) {
    if (lines.empty()) return std::string("<p class=\"note\">(none)</p>\n");
    std::string s = "<pre class=\"diff\"><code>";
    for (size_t i = 0; i < lines.size() && i < max_lines; ++i) {
      const std::string text = xml_escape(std::string(lines[i]));
      if (mark && marked[i])
        // A block of its own: the line ends with it (a newline after would add an empty one).
        s += fmt::format("<span class=\"{}\">{}</span>", cls, text.empty() ? " " : text);
      else
        s += text + "\n";
    }
    if (lines.size() > max_lines) s += fmt::format("… ({} more lines)\n", lines.size() - max_lines);
    return s + "</code></pre>\n";
  };
  std::string note =
      mark ? fmt::format(
                 "<p class=\"note\">{} lines removed (red), {} added (green), {} kept.</p>\n",
                 d.removed_count(), d.added_count(), d.common)
           : std::string(
                 "<p class=\"note\">The two texts are in different languages: no line "
                 "diff.</p>\n");
  return note + "<div class=\"pair\"><div><h3>before</h3>\n" + block(a, d.removed, "del") +
         "</div><div><h3>after</h3>\n" + block(b, d.added, "ins") + "</div></div>\n";
}

namespace {

std::string mb(int64_t bytes) {
  return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6);
}

/// The global bytes the TEs `tes` of `p` move run one kernel each: every TE reads each tensor
/// it reads once and writes its output once (compulsory traffic, from the TE shapes).
int64_t unfused_bytes(const te::TeProgram& p, const std::vector<int>& tes) {
  int64_t bytes = 0;
  for (int i : tes) {
    if (i < 0 || static_cast<size_t>(i) >= p.ops.size()) continue;
    const te::ComputeOp& op = *p.ops[static_cast<size_t>(i)];
    std::set<const te::TensorNode*> read;
    te::for_each_node(op.body, [&](const te::Expr& e) {
      if (const te::Read* r = e.as<te::Read>()) read.insert(r->tensor.get());
    });
    for (const te::TensorNode* t : read) bytes += shape_numel(t->shape) * dtype_size(t->dtype);
    bytes += shape_numel(op.output->shape) * dtype_size(op.output->dtype);
  }
  return bytes;
}

}  // namespace

/// The horizontal and vertical steps change the TE program, not yet kernels: their effect on
/// global traffic as the TE shapes give it, every TE of the whole program run as its own kernel.
std::string program_bytes_html(const PipelineStep& step, const PipelineWalk& walk) {
  const bool h = step.name == "horizontal";
  const te::TeProgram* before = walk.program_of(h ? StepGraph::Lowered : StepGraph::Horizontal);
  const te::TeProgram* after = walk.program_of(h ? StepGraph::Horizontal : StepGraph::Planned);
  if (!before || !after || before == after) return "";
  auto all = [](const te::TeProgram& p) {
    std::vector<int> tes(p.ops.size());
    for (size_t i = 0; i < tes.size(); ++i) tes[i] = static_cast<int>(i);
    return unfused_bytes(p, tes);
  };
  const int64_t b = all(*before), a = all(*after);
  if (a == b) return "";
  return fmt::format(
      "<div class=\"mempic\"><p class=\"bytes\">Global memory traffic of the whole model if "
      "each TE ran as its own kernel (each reading the tensors it reads once and writing its "
      "output once; from the TE shapes): <b>{}</b> before this step ({} TEs) → <b>{}</b> after "
      "({} TEs) — <b>{} {}</b>. {}</p></div>\n",
      mb(b), before->ops.size(), mb(a), after->ops.size(), mb(b >= a ? b - a : a - b),
      b >= a ? "saved" : "more",
      !h      ? "An inlined producer's result is never written to memory and read back."
      : b > a ? "Merged TEs read their common input once instead of once each."
              : "Merged TEs read their common input once, but here the merged TE's stacked "
                "weights and output, read back in slices, move more bytes: what the merge gains "
                "is one launch for several and more blocks busy at once.");
}

std::string lesson_memory_html(const PipelineStep& step, const PipelineWalk& walk,
                               int64_t max_threads) {
  if (step.name == "horizontal" || step.name == "vertical") return program_bytes_html(step, walk);
  if (step.name != "partition" || walk.partition < 0) return "";
  const plan::FusionPlan& p = walk.result.plan;
  const plan::Partition* part = nullptr;
  for (const plan::Partition& k : p.partitions)
    if (k.id == walk.partition) part = &k;
  if (!part) return "";
  const CompiledKernel* ck = nullptr;
  for (const CompiledKernel& c : walk.result.kernels.kernels)
    if (c.partition == walk.partition && !c.kernel.name.empty()) {
      ck = &c;
      break;
    }
  if (!ck || ck->kernel.launch.grid_x * ck->kernel.launch.block_x > max_threads) return "";
  emulate::KernelAccess rec;
  try {
    fault::point("lesson.memory_picture");
    rec = record_kernel_access(ck->kernel);
  } catch (const std::logic_error&) {
    throw;  // a bug in the emulator or the kernel is not a note in a lesson
  } catch (const std::exception& e) {
    return "<p class=\"note\">No memory picture: " + xml_escape(e.what()) + "</p>\n";
  }
  // Global bytes over every tensor; the picture draws a few: what crosses stages through
  // global memory and what the kernel writes (largest first), its shared buffers, its largest
  // inputs.
  PictureOptions all;
  all.frames = false;
  all.max_cell_rows = all.max_cell_cols = 8;
  int64_t after = 0;
  for (const TensorPicture& t : memory_picture(rec, all).tensors)
    if (t.role != emulate::TensorRole::Shared)
      after += (t.elements_read + t.elements_written) * dtype_size(t.dtype);
  PictureOptions po;
  po.max_cell_rows = 32;
  po.max_cell_cols = 64;
  {
    std::vector<const emulate::TensorAccess*> by_role[3];
    for (const emulate::TensorAccess& t : rec.tensors) {
      if (t.units.empty()) continue;
      const int g = t.role == emulate::TensorRole::Input    ? 2
                    : t.role == emulate::TensorRole::Shared ? 1
                                                            : 0;
      by_role[g].push_back(&t);
    }
    const size_t quota[3] = {6, 3, 3};
    for (int g = 0; g < 3; ++g) {
      std::stable_sort(by_role[g].begin(), by_role[g].end(),
                       [](const emulate::TensorAccess* a, const emulate::TensorAccess* b) {
                         return a->numel > b->numel;
                       });
      for (size_t i = 0; i < by_role[g].size() && i < quota[g]; ++i)
        po.only.push_back(by_role[g][i]->name);
    }
  }
  const MemoryPicture pic = memory_picture(rec, po);
  const int64_t before = unfused_bytes(p.program, part->tes);
  std::string s =
      fmt::format("<div class=\"mempic\"><h3>What kernel {} touches in memory</h3>\n", part->id);
  s += fmt::format(
      "<p class=\"bytes\">Global memory traffic of its {} TEs: <b>{}</b> as {} separate kernels "
      "(each reading its inputs once and writing its output once; from the TE shapes) → "
      "<b>{}</b> as this one kernel (distinct elements the emulator recorded it reading and "
      "writing in global memory) — <b>{} {}</b>. The plan's cost model prices the kernel's DRAM "
      "traffic at {}.</p>\n",
      part->tes.size(), mb(before), part->tes.size(), mb(after),
      before >= after ? mb(before - after) : mb(after - before), before >= after ? "saved" : "more",
      mb(part->dram_bytes));
  s += fmt::format("<p class=\"note\">{} of its {} tensors are drawn. ", pic.tensors.size(),
                   rec.tensors.size());
  s += "Each tensor is drawn folded to two dimensions (leading dimensions "
       "stacked along the rows); a cell is coloured by the block that wrote it (else read it "
       "first), and each block's tile is outlined.</p>\n";
  s += memory_picture_svg(pic);
  // The first block that reads other blocks' writes after a grid barrier, frame by itself.
  for (size_t f = 0; f < pic.frames.size(); ++f)
    if (!pic.frames[f].waits_for.empty() && pic.frames[f].at.phase.epoch > 0) {
      s += fmt::format(
          "<p class=\"note\">One frame of the animation: {}, reading (blue) what "
          "other blocks wrote before the grid barrier.</p>\n",
          xml_escape(pic.frames[f].label));
      // Only the tensors the frame touches.
      PictureOptions fo = po;
      fo.only.clear();
      for (const FrameCells& c : pic.frames[f].cells)
        fo.only.push_back(pic.tensors[static_cast<size_t>(c.tensor)].name);
      SvgPictureOptions so;
      so.frame = static_cast<int>(f);
      s += memory_picture_svg(memory_picture(rec, fo), so);
      const PictureFrame& fr = pic.frames[f];
      std::string producers;
      std::set<int32_t> seen;
      for (const auto& [tensor, b] : fr.waits_for)
        if (seen.insert(b).second && seen.size() <= 8)
          producers += (producers.empty() ? "" : ", ") + std::to_string(b);
      if (seen.size() > 8) producers += fmt::format(" … ({} blocks)", seen.size());
      s += fmt::format(
          "<details class=\"answer\"><summary>Why can block {} not start this stage before "
          "every block has reached the grid barrier?</summary><p>It reads {} that block{} {} "
          "wrote in an earlier stage. Blocks run in no fixed order on a GPU: without the "
          "barrier it could read those elements before they are written. The blue cells above "
          "are what it reads; the picture before shows who wrote them.</p></details>\n",
          fr.at.block, xml_escape(fr.waits_for.front().first), seen.size() > 1 ? "s" : "",
          producers);
      break;
    }
  s += "<ul class=\"sites\">\n";
  for (const std::string& n : pic.notes) s += "<li>" + xml_escape(n) + "</li>\n";
  s += "</ul></div>\n";
  return s;
}

const char* lesson_css() {
  return "pre.diff span.del { background: #ffd7d5; display: block; }\n"
         "pre.diff span.ins { background: #ccf0d4; display: block; }\n"
         ".step { border-top: 2px solid #0b57d0; margin-top: 28px; padding-top: 6px; }\n"
         "ul.sites { font-size: 13px; } ul.sites li { margin: 2px 0; }\n"
         "details.answer { background: #fffbe6; border-left: 4px solid #e0a800; padding: 6px "
         "12px; margin: 8px 0; }\n"
         "details.answer summary { cursor: pointer; font-weight: 600; }\n"
         "div.mempic svg { display: block; max-width: 100%; height: auto; margin: 6px 0; }\n"
         "div.mempic p.bytes { background: #eef4ff; padding: 6px 10px; }\n";
}

}  // namespace souffle::report
