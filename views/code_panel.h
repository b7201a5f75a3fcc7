/// \file Code views of the selected kernel: TE | Loop IR | CUDA C | PTX | SASS, highlighted, with
/// line numbers and a source map that ties lines to graph nodes both ways.
#pragma once

#include <QFutureWatcher>
#include <QHash>
#include <QPlainTextEdit>
#include <QStringList>
#include <QWidget>
#include <array>
#include <memory>
#include <vector>

#include "core/codegen/source_map.h"
#include "core/session/sass_report.h"
#include "views/plan_runner.h"

class QLabel;
class QTabWidget;

namespace souffle::views {

class CodeHighlighter;
class ExplorerSession;

/// A read-only monospace editor with a line-number gutter, highlighted line ranges, and a
/// signal for the line a user clicks.
class CodeEditor : public QPlainTextEdit {
  Q_OBJECT
 public:
  explicit CodeEditor(QWidget* parent = nullptr);
  /// Paints `lines` (1-based) with `color` behind the text; scrolls to the first when asked.
  void setHighlightedLines(const std::vector<int>& lines, const QColor& color, bool scroll);
  const std::vector<int>& highlightedLines() const { return m_highlighted; }
  /// A line painted on its own (a barrier between stages, by its boundary kind) with a tooltip.
  struct LineNote {
    int line = 0;
    QColor color;
    QString text;
  };
  /// Notes kept under the highlighted lines until replaced (an empty vector removes them).
  void setLineNotes(std::vector<LineNote> notes);
  const std::vector<LineNote>& lineNotes() const { return m_notes; }
  int lineNumberAreaWidth() const;
  /// The top of line `line` (1-based) in viewport coordinates (for tests clicking a line).
  QPoint linePosition(int line) const;

 signals:
  void lineClicked(int line);

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  friend class LineNumberArea;
  void paintLineNumbers(QPaintEvent* event);
  void updateGutter(const QRect& rect, int dy);
  void applySelections();

  QWidget* m_gutter;
  std::vector<int> m_highlighted;
  QColor m_highlightColor;
  std::vector<LineNote> m_notes;
};

/// A stage boundary's barrier line in a kernel's CUDA C (1-based), with its kind and reason.
struct BoundaryLine {
  int line = 0;
  BoundaryKind kind = BoundaryKind::None;
  QString text;  ///< describe(): kind and reason
};

/// Texts and source maps of one kernel, built off the GUI thread.
struct KernelCodeText {
  QString te, loop, cuda;
  codegen::SourceMap teMap, loopMap, cudaMap;
  /// The CUDA C lines of the partition's stage boundaries that have one (grid and block
  /// barriers between stages, the first line of a later launch).
  std::vector<BoundaryLine> cudaBoundaries;
  /// Each stage's tensor-core and cp.async use (stage_expectations of the launches, numbered as
  /// cudaMap numbers them), for the SASS tab's mix per stage.
  std::vector<StageSass> stages;
  QString kernelName;      ///< the CUDA function
  QString error;           ///< why there is no loop IR / CUDA (the kernel could not be built)
  bool builtHere = false;  ///< the kernel was built for this view (not found in the cache)
  double ms = 0;           ///< building (when built here), emitting and mapping
};
using KernelCodePtr = std::shared_ptr<const KernelCodeText>;

/// The PTX of one kernel (sm_80, with line information) and its map; the SASS of the same
/// compile (nvdisasm of its cubin) with its instruction mix per stage, each instruction's line
/// mapped through its CUDA C line.
struct PtxText {
  QString ptx;
  codegen::SourceMap map;
  QString error;
  QString sass;  ///< a summary (mix per stage) as comments, then the listing
  codegen::SourceMap sassMap;
  QString sassError;  ///< why there is no SASS (no nvdisasm, no cubin)
};

class CodePanel : public QWidget {
  Q_OBJECT
 public:
  enum Tab { TeTab, LoopTab, CudaTab, PtxTab, SassTab, TabCount };

  explicit CodePanel(QWidget* parent = nullptr);
  ~CodePanel() override;

  /// Follows `session`: its plan, the kernel selected in the kernel table, the node selected in
  /// the graph and the stage picked in the timeline; a click on a mapped line selects its nodes.
  void attach(ExplorerSession* session);
  /// The plan whose kernels the panel shows; nothing is built until a partition is shown.
  void setPlan(PlanDataPtr plan);
  /// Shows partition `partition` (index into plan->plan->partitions); -1 clears. Its kernel
  /// comes from the session's kernel cache (the planner's pricing usually built it), else it
  /// is built off the GUI thread: only what is shown is built.
  void showPartition(int partition);
  /// Highlights the lines of ONNX node `node` (of TE `te` when given and mapped) in every tab
  /// and scrolls the current tab to them.
  void highlightNode(const QString& node, const QString& te = {});
  /// Highlights the lines of stage `stage` of the partition shown (numbered as its loop IR
  /// numbers its stages: launches one after another) where a tab maps stages, the lines of
  /// `node` in the TE tab; scrolls the current tab to them.
  void highlightStage(int stage, const QString& node = {});
  void setDark(bool dark);

  int partition() const { return m_partition; }
  /// The code of the shown partition is there (true when none is shown).
  bool isReady() const;
  /// Partitions of the current plan whose code this panel asked for (in order).
  const QList<int>& requestedPartitions() const { return m_requested; }
  /// The PTX (and SASS) of the shown partition is there (or failed).
  bool isPtxReady() const;
  CodeEditor* editor(Tab tab) const { return m_editors[tab]; }
  QTabWidget* tabs() const { return m_tabs; }
  void setCurrentTab(Tab tab);
  /// The code of partition `partition` of `plan` (from the session's kernel cache, built there
  /// when missing); pure, never throws (errors land in the result).
  static KernelCodeText generate(PlanDataPtr plan, int partition);
  static PtxText compilePtx(const KernelCodeText& code);
  /// The SASS tab's text and map from the compile `r` of `code`.
  static void fillSass(PtxText& out, const KernelCodeText& code, const gpu::CompileResult& r,
                       const std::string& name);

 signals:
  /// A mapped line was clicked: the nodes (and TEs) its code computes.
  void nodesActivated(const QStringList& nodes, const QStringList& tes);
  /// The shown partition's code arrived.
  void codeReady();
  void ptxReady();

 private:
  void onGenerated();
  void requestCode();
  const KernelCodeText* current() const;
  void refresh();
  void requestPtx();
  const codegen::SourceMap* mapOf(Tab tab) const;
  void onLineClicked(Tab tab, int line);
  void applyHighlight(bool scroll);
  bool showsCompiled() const;  ///< the PTX or SASS tab is the current one
  /// Paints the CUDA C barrier lines of the kernel shown by their boundary kind.
  void applyBoundaryNotes();

  PlanDataPtr m_plan;
  QHash<int, KernelCodePtr> m_code;  ///< of m_plan, by partition
  QList<int> m_requested;
  QFutureWatcher<KernelCodeText>* m_watcher;
  int m_pending = -1;  ///< the partition being generated
  QFutureWatcher<PtxText>* m_ptxWatcher;
  int m_ptxPending = -1;
  QHash<int, PtxText> m_ptx;  ///< of m_plan, by partition
  int m_partition = -1;
  QString m_node, m_te;
  int m_stage = -1;  ///< highlightStage's stage (-1: the node's lines)
  bool m_dark = false;

  QLabel* m_header;
  QTabWidget* m_tabs;
  std::array<CodeEditor*, TabCount> m_editors{};
  std::array<CodeHighlighter*, TabCount> m_highlighters{};
};

}  // namespace souffle::views
