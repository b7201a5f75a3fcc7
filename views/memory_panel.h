/// \file The Memory panel: what the selected kernel (or one stage of it) touches, recorded on the
/// CPU emulator over zero inputs (not measured on a GPU) and drawn from the memory-picture model
/// (report/memory_picture.h): each tensor as a 2-D heat map coloured by block, by reads per
/// element or by first-touch time, the blocks' tiles outlined, and an animation that plays the
/// accesses block by block and grid barrier by grid barrier, naming what is in shared memory,
/// what goes to global scratch and which producer tiles a consumer waits for.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QImage>
#include <QPixmap>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include "core/emulate/access_record.h"
#include "core/report/memory_picture.h"
#include "views/plan_runner.h"

class QComboBox;
class QLabel;
class QScrollArea;
class QSlider;
class QTimer;
class QToolButton;

namespace souffle::views {

class ExplorerSession;

using MemoryPicturePtr = std::shared_ptr<const report::MemoryPicture>;

/// Paints a memory picture: the whole recording, or frame `f` (what was touched before it
/// drawn in full, the rest faded, the frame's reads and writes highlighted, the block's tiles
/// and the producer tiles it waits for outlined).
class MemoryCanvas : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryCanvas(QWidget* parent = nullptr);
  void setPicture(MemoryPicturePtr picture);
  MemoryPicturePtr picture() const { return m_picture; }
  /// -1: the whole recording.
  void setFrame(int frame);
  /// Records the shown stage again with every block (off the GUI thread, as every recording).
  void recordAllBlocks();
  int frame() const { return m_frame; }
  QSize sizeHint() const override;
  int heightForWidth(int width) const override;
  bool hasHeightForWidth() const override { return true; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Layout {
    QRect header, cells;
    int cellPx = 1;
  };
  std::vector<Layout> layout(int width) const;
  /// The legend, the tensors' names and roles and the tiles' outlines (cached in m_static).
  void paintStatic(QPainter& p, bool framed) const;
  static QRectF tileRect(const Layout& l, const report::TensorPicture& t,
                         const report::TileOutline& o);
  void rebuildProgress(int upTo);
  void addFrame(int f);

  MemoryPicturePtr m_picture;
  int m_frame = -1;
  int m_progressFrame = -1;        ///< frames 0..m_progressFrame are in m_progress
  std::vector<QImage> m_base;      ///< per tensor: its cells (cell_cols x cell_rows)
  std::vector<QImage> m_faded;     ///< the same, faded
  std::vector<QImage> m_progress;  ///< faded, with the cells touched so far in full
  std::vector<Layout> m_layout;
  int m_layoutWidth = -1;
  QPixmap m_static;  ///< paintStatic's layer at the current size
  bool m_staticFramed = false;
};

/// What the worker made: the recording and its picture.
struct MemoryPictureResult {
  std::shared_ptr<const emulate::KernelAccess> access;
  MemoryPicturePtr picture;
  QStringList stages;  ///< the recorded launch's stages, "name (schedule)"
  int partition = -1, launch = 0, stage = -1;
  QString kernel, error;
  double recordMs = 0, pictureMs = 0;
};

class MemoryPanel : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryPanel(QWidget* parent = nullptr);
  ~MemoryPanel() override;

  /// Follows `session`: its plan, the kernel selected in the kernel table and the node selected
  /// in the graph (the stage that computes it).
  void attach(ExplorerSession* session);
  void setPlan(PlanDataPtr plan);
  /// Records partition `partition` of the plan: the stage that computes ONNX node `node` (the
  /// first stage without one; the whole kernel when `stage` is -2), once the panel is visible.
  void showPartition(int partition, const QString& node = {});
  /// Records stage `stage` (-1: the whole launch) of the partition shown.
  void showStage(int stage);
  void setColouring(report::PictureColouring colouring);
  report::PictureColouring colouring() const { return m_colouring; }

  /// The picture on screen is the one last asked for.
  bool isReady() const { return m_ready; }
  /// A picture was asked for and is not on screen yet.
  bool isBusy() const { return m_partition >= 0 && !m_ready; }
  QString error() const { return m_error; }
  const MemoryPictureResult& result() const { return m_result; }
  MemoryCanvas* canvas() const { return m_canvas; }
  int frameCount() const;
  int frame() const;
  bool isPlaying() const;
  /// The time from asking to the picture on screen (recording, picture and first paint), ms.
  double lastShowMs() const { return m_showMs; }

  /// A stage records as many of its blocks as fit in about this many seconds
  /// (MemoryRecordOptions::budget_s), so that a big stage's picture comes in under a second;
  /// the picture says which blocks it holds, and "Record all blocks" records the rest.
  static constexpr double kStageBudgetS = 0.8;
  /// The picture on screen holds some of the blocks only.
  bool isSampled() const { return m_result.access && !m_result.access->blocks.empty(); }

  /// The synchronous body of the worker, for tests and benchmarks. `budget_s` as
  /// MemoryRecordOptions::budget_s, for a stage only (0: every block).
  static MemoryPictureResult record(PlanDataPtr plan, int partition, const QString& node, int stage,
                                    report::PictureColouring colouring,
                                    std::shared_ptr<const emulate::KernelAccess> access = {},
                                    double budget_s = 0);

 public slots:
  void play();
  void pause();
  /// One frame on (back when `by` < 0); at the end it stays.
  void step(int by = 1);
  void setFrame(int frame);
  /// Records the shown stage again with every block (off the GUI thread, as every recording).
  void recordAllBlocks();

 signals:
  void ready();
  void failed(const QString& why);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void start(std::shared_ptr<const emulate::KernelAccess> access = {});
  void finished();
  void updateFrameLabel();

  PlanDataPtr m_plan;
  int m_partition = -1;
  QString m_node;
  int m_stage = -1;
  bool m_stageChosen = false;
  bool m_allBlocks = false;  ///< the user asked for every block of the stage shown
  bool m_dirty = false;
  bool m_ready = false;
  QString m_error;
  report::PictureColouring m_colouring = report::PictureColouring::Block;
  MemoryPictureResult m_result;
  QFutureWatcher<MemoryPictureResult>* m_watcher;
  quint64 m_generation = 0;
  QElapsedTimer m_clock;  ///< since the picture was asked for
  double m_showMs = 0;

  QLabel* m_title;
  QComboBox* m_stageBox;
  QComboBox* m_colourBox;
  QToolButton* m_allButton;
  QToolButton* m_playButton;
  QToolButton* m_stepBack;
  QToolButton* m_stepOn;
  QSlider* m_slider;
  QLabel* m_frameLabel;
  QLabel* m_notes;
  QScrollArea* m_scroll;
  MemoryCanvas* m_canvas;
  QTimer* m_timer;
};

}  // namespace souffle::views
