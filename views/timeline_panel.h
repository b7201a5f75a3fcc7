/// \file The Timeline panel (docs/timeline.md): a kernel's stages as spans on one row per SM (or
/// per block), waits hatched, grid barriers and flag waits as vertical lines; zoom with the
/// wheel, pan by dragging; hover names the span, a click selects its stage's nodes in the graph
/// and its lines in the Code panel. Its timeline comes from the emulator (run here, off the GUI
/// thread, labelled as the emulator's estimate) or from record files `profile --timeline` kept.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QImage>
#include <QStringList>
#include <QWidget>
#include <atomic>
#include <memory>

#include "views/timeline_scene.h"

class QAction;
class QComboBox;
class QLabel;
class QTemporaryDir;
class QToolBar;

namespace souffle::views {

class ExplorerSession;

/// The chart: a ruler, row labels, and the level-of-detail raster of the window shown, cached
/// until the window, size, rows, selection or theme change.
class TimelineCanvas : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineCanvas(QWidget* parent = nullptr);

  /// The kernel shown (null: none); the window fits the whole kernel.
  void setKernel(const TimelineKernel* kernel, const TimelineRows* rows);
  const TimelineKernel* kernel() const { return m_kernel; }
  const TimelineRows* rows() const { return m_rows; }
  /// The time window shown, µs from the kernel's first record.
  void setWindow(double t0, double t1);
  double windowStart() const { return m_t0; }
  double windowEnd() const { return m_t1; }
  void fit();
  /// Zooms by `factor` (> 1: in) around chart x position `x`.
  void zoom(double factor, double x);
  void setSelectedStages(std::vector<char> selected);
  const std::vector<char>& selectedStages() const { return m_selected; }
  void setDark(bool dark);
  /// The chart area in widget coordinates.
  QRect chartRect() const;
  /// The span under widget position `pos` (index into the kernel's spans), -1 for none.
  int spanAt(const QPoint& pos) const;
  /// The tooltip of span `span`: stage, block, SM, times, the wait before it, its nodes.
  QString spanText(int span) const;
  /// The widget position at the middle of span `span` (for tests), invalid when not shown.
  QPoint spanPosition(int span) const;
  /// The raster of the last frame drawn took this long (ms), and read this many spans.
  double lastRasterMs() const { return m_rasterMs; }
  int64_t lastSpansVisited() const { return m_visited; }
  /// Drops the cached raster, so the next frame draws it again (for the bench).
  void invalidate() { m_cache = QImage(); }

 signals:
  void spanClicked(int span);
  void windowChanged();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  double timeAt(int x) const;
  double xAt(double us) const;

  const TimelineKernel* m_kernel = nullptr;
  const TimelineRows* m_rows = nullptr;
  double m_t0 = 0, m_t1 = 1;
  std::vector<char> m_selected;
  bool m_dark = false;
  QImage m_cache;
  double m_cacheT0 = 0, m_cacheT1 = 0;
  double m_rasterMs = 0;
  int64_t m_visited = 0;
  QPoint m_press;
  double m_pressT0 = 0, m_pressT1 = 0;
  bool m_dragging = false;
};

class TimelinePanel : public QWidget {
  Q_OBJECT
 public:
  explicit TimelinePanel(QWidget* parent = nullptr);
  ~TimelinePanel() override;

  /// Follows `session`: its plan (with the model's input options), the node selected in the
  /// graph; says its progress through it, and a span selects its stage's nodes and lines.
  void attach(ExplorerSession* session);
  /// Kernels menu entries: run on the emulator and open record files (each brings the panel to
  /// the front).
  QList<QAction*> menuActions();
  /// The plan on screen: the emulator profiles it, record files are tied to it. A timeline of
  /// another plan is dropped (its stages are not this plan's).
  void setPlan(PlanDataPtr plan);
  /// How the model was imported (--dim, --bind, --shape), for the emulator's bundle.
  void setInputOptions(const QStringList& dims, const QStringList& binds,
                       const QStringList& shapes);
  /// Profiles the plan on the emulator with timeline records, off the GUI thread.
  void runEmulator();
  /// Cancels the run or file read: the panel says "cancelled" at once and drops its result; the
  /// emulator's runner process is killed at its next poll (every 100 ms).
  void cancel();
  bool isBusy() const { return m_busy; }
  /// The work thread of the last run or read is still going (after a cancel: until it stops).
  bool isJobRunning() const;
  /// The record files of the timeline shown, for a project to remember: the files opened, or
  /// the emulator run's records kept in a temporary folder of this panel (isKept).
  QStringList recordFiles() const;
  /// plan_key of the plan the records were tied to (empty: none).
  QString recordPlanKey() const;
  bool isKept(const QString& file) const;
  /// recordFiles(), with each kept file (isKept) copied into `dir` under its path below the
  /// panel's folder (`run-2/souffle.kernel0.timeline`; a copy already there is kept: a run's
  /// records never change) and named there: an autosave keeps them where a crash does not
  /// remove them. A file that cannot be copied is named where it is.
  QStringList copyKeptRecords(const QString& dir) const;
  /// The records now live at `files` (a project saved copies of the kept ones beside itself).
  void relocateRecords(const QStringList& files) { m_recordFiles = files; }
  /// A project opened with a timeline: its record files are read once a plan whose plan_key is
  /// `planKey` arrives; a file missing or refused is shown in red, naming it.
  void restoreRecords(const QStringList& files, const QString& planKey);
  /// Reads record files (off the GUI thread); asks for them when `files` is empty.
  void openFiles(QStringList files = {});
  /// Shows `data` (null: none) and says so.
  void setData(TimelineDataPtr data);
  TimelineDataPtr data() const { return m_data; }
  /// The kernel shown (index into data()->kernels).
  void setCurrentKernel(int k);
  int currentKernel() const { return m_kernelIndex; }
  void setPerBlock(bool on);
  bool perBlock() const { return m_perBlock; }
  /// Highlights the spans of the stages that compute any of `nodes` (a node selected in the
  /// graph); returns how many stages.
  int highlightNodes(const QStringList& nodes);
  /// Selects stage `stage` of the kernel shown, as a click on one of its spans does.
  void activateSpan(int span);
  void setDark(bool dark);

  QString errorText() const;
  QString infoText() const;
  TimelineCanvas* canvas() const { return m_canvas; }
  QComboBox* kernelBox() const { return m_kernels; }
  QAction* runAction() const { return m_runAction; }
  QAction* openAction() const { return m_openAction; }

 signals:
  /// A span was clicked: its stage (numbered as the partition's code numbers its stages) and
  /// the graph nodes and TEs it computes; partition -1 when the kernel is not the plan's.
  void stageActivated(int partition, int stage, const QStringList& nodes, const QStringList& tes);
  /// A timeline arrived or was dropped (the heat map's timeline colourings follow).
  void dataChanged();
  void progress(const QString& what);
  /// A run or read started (with what it does) or ended (the status bar's busy indicator).
  void busyChanged(bool busy, const QString& what);
  /// A run or a file read finished (with data or an error) or was cancelled.
  void finished();

 private:
  struct Outcome {
    TimelineDataPtr data;
    QString error;
    bool cancelled = false;
    QStringList kept;       ///< the emulator run's record files, kept
    bool restored = false;  ///< a project's records
    bool carried = false;   ///< the timeline shown, carried over to a new plan
    QString recordKey;      ///< the records' plan_key, when not the new data's plan's
  };
  void carryOver();
  void start(std::function<Outcome()> work, const QString& what);
  void showError(const QString& error);
  void updateInfo();
  void readFiles(const QStringList& files, bool restored);

  PlanDataPtr m_plan;
  QStringList m_dims, m_binds, m_shapes;
  TimelineDataPtr m_data;
  int m_kernelIndex = -1;
  bool m_perBlock = false;
  std::unique_ptr<TimelineRows> m_rows;
  QFutureWatcher<Outcome>* m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancel;
  quint64 m_generation = 0;
  bool m_busy = false;
  QElapsedTimer m_clock;
  std::unique_ptr<QTemporaryDir> m_keep;  ///< the emulator runs' record files
  int m_runs = 0;
  QStringList m_recordFiles, m_pendingFiles;
  QString m_recordKey, m_pendingKey;

  QToolBar* m_bar;
  QAction* m_runAction;
  QAction* m_cancelAction;
  QAction* m_openAction;
  QAction* m_blockAction;
  QComboBox* m_kernels;
  QLabel* m_info;
  QLabel* m_error;
  TimelineCanvas* m_canvas;
};

}  // namespace souffle::views
