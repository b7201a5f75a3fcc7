#include "views/memory_panel.h"

#include <QComboBox>
#include <QElapsedTimer>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSlider>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>
#include <algorithm>
#include <set>

#include "core/session/kernel_cache.h"
#include "core/session/memory_record.h"
#include "views/explorer_session.h"

namespace souffle::views {

namespace {

constexpr int kMargin = 8;
constexpr int kMaxCellPx = 10;
constexpr int kMaxHeight = 260;

QColor rgbColour(uint32_t rgb) {
  return QColor(int((rgb >> 16) & 0xff), int((rgb >> 8) & 0xff), int(rgb & 0xff));
}

/// A colour towards white by `keep` (0: white, 1: the colour).
QRgb faded(QRgb c, double keep) {
  const auto mix = [keep](int v) { return int(255 - (255 - v) * keep); };
  return qRgb(mix(qRed(c)), mix(qGreen(c)), mix(qBlue(c)));
}

QString roleText(const report::TensorPicture& t) {
  switch (t.role) {
    case emulate::TensorRole::Input:
      return QObject::tr("input (global)");
    case emulate::TensorRole::Output:
      return QObject::tr("output (global)");
    case emulate::TensorRole::Scratch:
      return QObject::tr("global scratch: crosses a stage boundary through global memory");
    case emulate::TensorRole::Shared:
      return QObject::tr("shared memory: one block's copy, %1 bytes per block").arg(t.shared_bytes);
  }
  return {};
}

QString shapeText(const Shape& s) {
  QStringList d;
  for (int64_t x : s) d << QString::number(x);
  return QLatin1Char('[') + d.join(QLatin1Char('x')) + QLatin1Char(']');
}

}  // namespace

// ---- MemoryCanvas --------------------------------------------------------------------------

MemoryCanvas::MemoryCanvas(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("memoryCanvas"));
  setAutoFillBackground(true);
  QPalette p = palette();
  p.setColor(QPalette::Window, Qt::white);
  p.setColor(QPalette::WindowText, Qt::black);
  setPalette(p);
  QSizePolicy sp(QSizePolicy::Expanding, QSizePolicy::Preferred);
  sp.setHeightForWidth(true);
  setSizePolicy(sp);
}

void MemoryCanvas::setPicture(MemoryPicturePtr picture) {
  m_picture = std::move(picture);
  m_base.clear();
  m_faded.clear();
  m_progress.clear();
  m_frame = -1;
  m_progressFrame = -1;
  m_layoutWidth = -1;
  m_static = QPixmap();
  if (m_picture)
    for (const report::TensorPicture& t : m_picture->tensors) {
      QImage img(t.cell_cols, t.cell_rows, QImage::Format_RGB32);
      QImage fade(t.cell_cols, t.cell_rows, QImage::Format_RGB32);
      for (int r = 0; r < t.cell_rows; ++r) {
        auto* line = reinterpret_cast<QRgb*>(img.scanLine(r));
        auto* fl = reinterpret_cast<QRgb*>(fade.scanLine(r));
        for (int c = 0; c < t.cell_cols; ++c) {
          const size_t i = size_t(r) * size_t(t.cell_cols) + size_t(c);
          const uint32_t rgb = i < t.rgb.size() ? t.rgb[i] : report::kUntouched;
          line[c] = 0xff000000u | rgb;
          fl[c] = faded(line[c], 0.22);
        }
      }
      m_base.push_back(std::move(img));
      m_faded.push_back(std::move(fade));
    }
  updateGeometry();
  update();
}

std::vector<MemoryCanvas::Layout> MemoryCanvas::layout(int width) const {
  std::vector<Layout> out;
  if (!m_picture) return out;
  const int line = fontMetrics().lineSpacing();
  int y = kMargin + line + 4;  // the legend's row
  const int avail = std::max(40, width - 2 * kMargin);
  for (const report::TensorPicture& t : m_picture->tensors) {
    Layout l;
    l.header = QRect(kMargin, y, avail, 2 * line);
    y += 2 * line + 2;
    // Cells as big as the width allows, a tensor at most about kMaxHeight tall.
    l.cellPx = std::clamp(
        std::min(avail / std::max(1, t.cell_cols), kMaxHeight / std::max(1, t.cell_rows)), 1,
        kMaxCellPx);
    l.cells = QRect(kMargin, y, t.cell_cols * l.cellPx, t.cell_rows * l.cellPx);
    y += l.cells.height() + line;
    out.push_back(l);
  }
  return out;
}

int MemoryCanvas::heightForWidth(int width) const {
  const std::vector<Layout> l = layout(width);
  return l.empty() ? 120 : l.back().cells.bottom() + kMargin;
}

QSize MemoryCanvas::sizeHint() const {
  return QSize(640, heightForWidth(640));
}

void MemoryCanvas::resizeEvent(QResizeEvent* event) {
  m_layoutWidth = -1;
  QWidget::resizeEvent(event);
}

void MemoryCanvas::addFrame(int f) {
  const report::PictureFrame& fr = m_picture->frames[size_t(f)];
  for (const report::FrameCells& fc : fr.cells) {
    if (fc.tensor < 0 || size_t(fc.tensor) >= m_progress.size()) continue;
    QImage& img = m_progress[size_t(fc.tensor)];
    const QImage& base = m_base[size_t(fc.tensor)];
    const int cols = img.width();
    for (const auto* cells : {&fc.read_cells, &fc.write_cells})
      for (int32_t c : *cells) {
        const int x = c % cols, y = c / cols;
        if (y < img.height()) img.setPixel(x, y, base.pixel(x, y));
      }
  }
}

void MemoryCanvas::rebuildProgress(int upTo) {
  if (upTo < m_progressFrame || m_progress.size() != m_faded.size()) {
    m_progress = m_faded;
    m_progressFrame = -1;
  }
  for (int f = m_progressFrame + 1; f <= upTo; ++f) addFrame(f);
  m_progressFrame = upTo;
}

void MemoryCanvas::setFrame(int frame) {
  if (!m_picture) return;
  frame = std::clamp(frame, -1, int(m_picture->frames.size()) - 1);
  if (frame == m_frame) return;
  m_frame = frame;
  if (frame >= 0) rebuildProgress(frame);
  update();
}

void MemoryCanvas::paintStatic(QPainter& p, bool framed) const {
  const int line = fontMetrics().lineSpacing();
  // The legend.
  int x = kMargin;
  p.setPen(Qt::black);
  p.drawText(QPoint(x, kMargin + fontMetrics().ascent()),
             tr("Colour: %1").arg(QLatin1String(report::colouring_name(m_picture->colouring))));
  x += fontMetrics().horizontalAdvance(tr("Colour: first touch")) + 12;
  for (size_t i = 0; i < m_picture->legend.size() && i < 12; ++i) {
    const report::LegendEntry& e = m_picture->legend[i];
    const QString text = QString::fromStdString(e.label);
    if (x + 14 + fontMetrics().horizontalAdvance(text) > width()) break;
    p.fillRect(QRect(x, kMargin + 2, 10, 10), rgbColour(e.rgb));
    p.drawText(QPoint(x + 14, kMargin + fontMetrics().ascent()), text);
    x += 14 + fontMetrics().horizontalAdvance(text) + 10;
  }
  for (size_t i = 0; i < m_picture->tensors.size() && i < m_layout.size(); ++i) {
    const report::TensorPicture& t = m_picture->tensors[i];
    const Layout& l = m_layout[i];
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(Qt::black);
    const QString name = QString::fromStdString(t.name) + QLatin1Char(' ') + shapeText(t.shape);
    p.drawText(QPoint(l.header.left(), l.header.top() + fontMetrics().ascent()), name);
    p.setFont(font());
    p.setPen(t.role == emulate::TensorRole::Shared    ? QColor(0, 110, 60)
             : t.role == emulate::TensorRole::Scratch ? QColor(170, 60, 0)
                                                      : QColor(70, 70, 70));
    p.drawText(QPoint(l.header.left(), l.header.top() + line + fontMetrics().ascent()),
               tr("%1 · %2 elements read, %3 written")
                   .arg(roleText(t))
                   .arg(t.elements_read)
                   .arg(t.elements_written));
    // The blocks' tiles.
    if (t.tiles.size() > 4096) continue;
    p.setPen(QPen(QColor(0, 0, 0, framed ? 50 : 110), 0));
    p.setBrush(Qt::NoBrush);
    for (const report::TileOutline& o : t.tiles) p.drawRect(tileRect(l, t, o));
  }
}

QRectF MemoryCanvas::tileRect(const Layout& l, const report::TensorPicture& t,
                              const report::TileOutline& o) {
  const double sx = double(l.cells.width()) / double(std::max<int64_t>(1, t.cols));
  const double sy = double(l.cells.height()) / double(std::max<int64_t>(1, t.rows));
  return QRectF(l.cells.left() + o.col * sx, l.cells.top() + o.row * sy, o.cols * sx, o.rows * sy);
}

void MemoryCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  if (!m_picture) {
    p.setPen(Qt::darkGray);
    p.drawText(rect().adjusted(kMargin, kMargin, -kMargin, -kMargin), Qt::TextWordWrap,
               tr("Select a kernel or a node: the Memory panel records on the emulator what its "
                  "stage touches"));
    return;
  }
  if (m_layoutWidth != width()) {
    m_layout = layout(width());
    m_layoutWidth = width();
    m_static = QPixmap();
  }
  const report::PictureFrame* fr = m_frame >= 0 ? &m_picture->frames[size_t(m_frame)] : nullptr;
  for (size_t i = 0; i < m_picture->tensors.size() && i < m_layout.size(); ++i)
    p.drawImage(m_layout[i].cells, fr ? m_progress[i] : m_base[i]);
  // Names, roles and tile outlines change only with the picture and the width: drawn once.
  const bool framed = fr != nullptr;
  const qreal dpr = devicePixelRatioF();
  if (m_static.isNull() || m_staticFramed != framed || m_static.size() != size() * dpr) {
    m_static = QPixmap(size() * dpr);
    m_static.setDevicePixelRatio(dpr);
    m_static.fill(Qt::transparent);
    QPainter sp(&m_static);
    sp.setFont(font());
    paintStatic(sp, framed);
    m_staticFramed = framed;
  }
  p.drawPixmap(0, 0, m_static);
  if (!fr) return;
  // The frame: its reads and writes, its block's tiles, the producer tiles it waits for.
  std::set<int32_t> producers;
  std::set<std::string> waitTensors;
  for (const auto& [tensor, block] : fr->waits_for) {
    producers.insert(block);
    waitTensors.insert(tensor);
  }
  for (size_t i = 0; i < m_picture->tensors.size() && i < m_layout.size(); ++i) {
    const report::TensorPicture& t = m_picture->tensors[i];
    const Layout& l = m_layout[i];
    for (const report::FrameCells& fc : fr->cells) {
      if (size_t(fc.tensor) != i) continue;
      const auto cellRect = [&](int32_t c) {
        const int cx = c % t.cell_cols, cy = c / t.cell_cols;
        return QRect(l.cells.left() + cx * l.cellPx, l.cells.top() + cy * l.cellPx, l.cellPx,
                     l.cellPx);
      };
      for (int32_t c : fc.read_cells) p.fillRect(cellRect(c), QColor(30, 110, 230, 150));
      for (int32_t c : fc.write_cells) p.fillRect(cellRect(c), QColor(230, 60, 20, 170));
    }
    const bool waited = waitTensors.count(t.name) > 0;
    for (const report::TileOutline& o : t.tiles) {
      if (o.block == fr->at.block) {
        p.setPen(QPen(Qt::black, 2));
        p.drawRect(tileRect(l, t, o));
      } else if (waited && producers.count(o.block)) {
        p.setPen(QPen(QColor(230, 130, 0), 2, Qt::DashLine));
        p.drawRect(tileRect(l, t, o));
      }
    }
  }
}

// ---- MemoryPanel ---------------------------------------------------------------------------

MemoryPanel::MemoryPanel(QWidget* parent)
    : QWidget(parent), m_watcher(new QFutureWatcher<MemoryPictureResult>(this)) {
  setObjectName(QStringLiteral("memoryPanel"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  m_title = new QLabel(this);
  m_title->setWordWrap(true);
  m_title->setText(tr("Recorded on the CPU emulator over zero inputs, not measured on a GPU"));
  layout->addWidget(m_title);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Record"), this));
  m_stageBox = new QComboBox(this);
  m_stageBox->setToolTip(tr("The stage to record, or the whole kernel"));
  m_stageBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_stageBox->setMinimumContentsLength(28);
  bar->addWidget(m_stageBox);
  bar->addWidget(new QLabel(tr("  Colour by"), this));
  m_colourBox = new QComboBox(this);
  for (report::PictureColouring c :
       {report::PictureColouring::Block, report::PictureColouring::Reuse,
        report::PictureColouring::FirstTouch})
    m_colourBox->addItem(QLatin1String(report::colouring_name(c)), int(c));
  m_colourBox->setToolTip(
      tr("Block: which block touched each cell; reuse: reads per element; first touch: when "
         "each cell was first read or written"));
  bar->addWidget(m_colourBox);
  m_allButton = new QToolButton(this);
  m_allButton->setObjectName(QStringLiteral("memoryAllBlocks"));
  m_allButton->setText(tr("Record all blocks"));
  m_allButton->setToolTip(
      tr("The picture holds a sample of the stage's blocks (recorded in under a second): record "
         "every block (on the emulator, this can take a while)"));
  m_allButton->setVisible(false);
  bar->addWidget(m_allButton);
  bar->addSpacing(12);
  m_stepBack = new QToolButton(this);
  m_stepBack->setText(tr("◀"));
  m_stepBack->setToolTip(tr("One block back"));
  m_playButton = new QToolButton(this);
  m_playButton->setText(tr("Play"));
  m_playButton->setToolTip(tr("Play the accesses block by block, grid barrier by grid barrier"));
  m_stepOn = new QToolButton(this);
  m_stepOn->setText(tr("▶"));
  m_stepOn->setToolTip(tr("One block on"));
  for (QToolButton* b : {m_stepBack, m_playButton, m_stepOn}) bar->addWidget(b);
  m_slider = new QSlider(Qt::Horizontal, this);
  m_slider->setMinimum(-1);
  m_slider->setMaximum(-1);
  m_slider->setToolTip(tr("Frame: the whole recording at the left end"));
  bar->addWidget(m_slider, 1);
  layout->addLayout(bar);
  m_frameLabel = new QLabel(this);
  m_frameLabel->setObjectName(QStringLiteral("memoryFrameLabel"));
  m_frameLabel->setWordWrap(true);
  layout->addWidget(m_frameLabel);
  m_notes = new QLabel(this);
  m_notes->setWordWrap(true);
  m_notes->setTextFormat(Qt::PlainText);
  QFont small = m_notes->font();
  small.setPointSizeF(small.pointSizeF() * 0.9);
  m_notes->setFont(small);
  layout->addWidget(m_notes);
  m_canvas = new MemoryCanvas;
  m_scroll = new QScrollArea(this);
  m_scroll->setWidget(m_canvas);
  m_scroll->setWidgetResizable(true);
  layout->addWidget(m_scroll, 1);
  m_timer = new QTimer(this);
  m_timer->setInterval(120);

  connect(m_watcher, &QFutureWatcher<MemoryPictureResult>::finished, this, &MemoryPanel::finished);
  connect(m_colourBox, &QComboBox::currentIndexChanged, this, [this](int i) {
    setColouring(static_cast<report::PictureColouring>(m_colourBox->itemData(i).toInt()));
  });
  connect(m_stageBox, &QComboBox::activated, this,
          [this](int i) { showStage(m_stageBox->itemData(i).toInt()); });
  connect(m_allButton, &QToolButton::clicked, this, &MemoryPanel::recordAllBlocks);
  connect(m_playButton, &QToolButton::clicked, this, [this] { isPlaying() ? pause() : play(); });
  connect(m_stepOn, &QToolButton::clicked, this, [this] { step(1); });
  connect(m_stepBack, &QToolButton::clicked, this, [this] { step(-1); });
  connect(m_slider, &QSlider::valueChanged, this, [this](int v) {
    if (v != frame()) setFrame(v);
  });
  connect(m_timer, &QTimer::timeout, this, [this] {
    // Long recordings play in about 20 s: several frames a tick.
    const int n = frameCount();
    const int by = std::max(1, n / 160);
    if (frame() + 1 >= n) {
      pause();
      return;
    }
    setFrame(std::min(n - 1, frame() + by));
  });
}

MemoryPanel::~MemoryPanel() {
  m_watcher->waitForFinished();
}

void MemoryPanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::planChanged, this, &MemoryPanel::setPlan);
  connect(session, &ExplorerSession::partitionSelected, this, [this](int k) { showPartition(k); });
  connect(session, &ExplorerSession::nodeSelected, this, [this](const NodeSelection& n) {
    if (n.partition >= 0) showPartition(n.partition, n.node);
  });
}

void MemoryPanel::setPlan(PlanDataPtr plan) {
  if (plan == m_plan) return;
  m_plan = std::move(plan);
  pause();
  ++m_generation;
  m_partition = -1;
  m_result = {};
  m_ready = false;
  m_canvas->setPicture(nullptr);
  m_stageBox->clear();
  m_frameLabel->clear();
  m_notes->clear();
  m_slider->setMaximum(-1);
}

void MemoryPanel::showPartition(int partition, const QString& node) {
  if (!m_plan || partition < 0) return;
  if (partition == m_partition && node == m_node && (m_ready || m_dirty)) return;
  m_partition = partition;
  m_node = node;
  m_stage = -1;
  m_stageChosen = false;
  m_allBlocks = false;
  if (isVisible())
    start();
  else
    m_dirty = true;
}

void MemoryPanel::showStage(int stage) {
  if (m_partition < 0) return;
  m_stage = stage;
  m_stageChosen = true;
  m_allBlocks = false;
  start();
}

void MemoryPanel::recordAllBlocks() {
  if (m_partition < 0 || m_allBlocks) return;
  // The stage shown, by index (the node's stage was resolved by the last recording).
  if (m_result.partition == m_partition && !m_stageChosen) {
    m_stage = m_result.stage;
    m_stageChosen = true;
  }
  m_allBlocks = true;
  start();
}

void MemoryPanel::setColouring(report::PictureColouring colouring) {
  if (colouring == m_colouring) return;
  m_colouring = colouring;
  const int i = m_colourBox->findData(int(colouring));
  if (i >= 0 && i != m_colourBox->currentIndex()) m_colourBox->setCurrentIndex(i);
  // The same recording, coloured again.
  if (m_result.access && m_partition == m_result.partition) start(m_result.access);
}

void MemoryPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (m_dirty) start();
}

void MemoryPanel::start(std::shared_ptr<const emulate::KernelAccess> access) {
  m_dirty = false;
  if (!m_plan || m_partition < 0) return;
  pause();
  m_ready = false;
  m_error.clear();
  ++m_generation;
  m_clock.start();
  m_allButton->setVisible(false);
  m_title->setText(m_allBlocks ? tr("Recording every block on the CPU emulator (zero inputs, not "
                                    "a GPU)…")
                               : tr("Recording on the CPU emulator (zero inputs, not a GPU)…"));
  const PlanDataPtr plan = m_plan;
  const int partition = m_partition;
  const QString node = m_stageChosen ? QString() : m_node;
  const int stage = m_stageChosen ? m_stage : -3;  // -3: the node's stage, else the first
  const report::PictureColouring colouring = m_colouring;
  const quint64 generation = m_generation;
  const double budget = m_allBlocks ? 0 : kStageBudgetS;
  m_watcher->setProperty("generation", generation);
  m_watcher->setFuture(QtConcurrent::run(
      [=] { return record(plan, partition, node, stage, colouring, access, budget); }));
}

MemoryPictureResult MemoryPanel::record(PlanDataPtr plan, int partition, const QString& node,
                                        int stage, report::PictureColouring colouring,
                                        std::shared_ptr<const emulate::KernelAccess> access,
                                        double budget_s) {
  MemoryPictureResult r;
  r.partition = partition;
  r.stage = stage;
  try {
    if (!plan || !plan->plan || partition < 0 ||
        size_t(partition) >= plan->plan->partitions.size()) {
      r.error = QObject::tr("no such kernel in the plan");
      return r;
    }
    PartitionKernelsPtr built = shared_kernel_cache().kernels(*plan->plan, size_t(partition));
    if (!built->error.empty()) {
      r.error = QString::fromStdString(built->error);
      return r;
    }
    if (built->kernels.empty()) {
      r.error = QObject::tr("the kernel holds only views: it launches nothing");
      return r;
    }
    // The launch and stage: the node's, else the first stage of the first launch.
    int launch = 0;
    if (stage == -3) {
      stage = built->kernels.front().kernel.stages.empty() ? -1 : 0;
      const std::string n = node.toStdString();
      bool found = false;
      for (size_t l = 0; l < built->kernels.size() && !found && !n.empty(); ++l)
        for (size_t s = 0; s < built->kernels[l].kernel.stages.size() && !found; ++s)
          for (const te::Origin& o : built->kernels[l].kernel.stages[s].origins)
            if (o.node == n) {
              launch = int(l);
              stage = int(s);
              found = true;
            }
    }
    const loop::Kernel& k = built->kernels[size_t(launch)].kernel;
    r.launch = launch;
    r.stage = stage;
    r.kernel = QString::fromStdString(k.name);
    for (const loop::StageInfo& s : k.stages) {
      const std::string schedule = s.schedule.substr(0, s.schedule.find(';'));
      r.stages << QStringLiteral("%1 (%2)").arg(QString::fromStdString(s.name),
                                                QString::fromStdString(schedule));
    }
    QElapsedTimer t;
    // A recording of some blocks is kept for another colouring, not when every block is asked.
    if (!access || access->kernel != k.name || access->stage != stage ||
        (budget_s <= 0 && !access->blocks.empty())) {
      t.start();
      MemoryRecordOptions mo;
      mo.stage = stage;
      if (stage >= 0) mo.budget_s = budget_s;
      access = std::make_shared<const emulate::KernelAccess>(record_kernel_access(k, mo));
      r.recordMs = double(t.nsecsElapsed()) / 1e6;
    }
    r.access = access;
    t.start();
    report::PictureOptions po;
    po.colouring = colouring;
    r.picture = std::make_shared<const report::MemoryPicture>(report::memory_picture(*access, po));
    r.pictureMs = double(t.nsecsElapsed()) / 1e6;
  } catch (const std::exception& e) {
    r.error = QString::fromUtf8(e.what());
  }
  return r;
}

void MemoryPanel::finished() {
  if (m_watcher->property("generation").toULongLong() != m_generation) return;
  MemoryPictureResult r = m_watcher->result();
  if (!r.error.isEmpty()) {
    m_error = r.error;
    m_title->setText(tr("Not recorded: %1").arg(r.error));
    m_canvas->setPicture(nullptr);
    m_ready = true;
    emit failed(r.error);
    return;
  }
  m_result = std::move(r);
  {
    const QSignalBlocker b(m_stageBox);
    m_stageBox->clear();
    m_stageBox->addItem(tr("whole kernel %1").arg(m_result.kernel), -1);
    for (int s = 0; s < m_result.stages.size(); ++s)
      m_stageBox->addItem(tr("stage %1: %2").arg(s).arg(m_result.stages[s]), s);
    m_stageBox->setCurrentIndex(m_stageBox->findData(m_result.stage));
  }
  const report::MemoryPicture& pic = *m_result.picture;
  // The schedule's tuning notes (after ';') are in the Code panel; the title keeps its shape.
  QString title = QString::fromStdString(pic.title);
  if (const int cut = title.indexOf(QLatin1Char(';')); cut > 0) title = title.left(cut) + u')';
  const emulate::KernelAccess& acc = *m_result.access;
  const QString blocks = acc.blocks.empty()
                             ? QString::number(pic.grid)
                             : tr("%1 of %2").arg(qulonglong(acc.blocks.size())).arg(pic.grid);
  m_allButton->setVisible(!acc.blocks.empty() && acc.stage >= 0);
  m_title->setText(
      tr("%1 — recorded on the CPU emulator over zero inputs (not measured on a GPU): %2 "
         "blocks, %3 grid barrier(s); global traffic if nothing is cached: %4 KiB read, %5 KiB "
         "written%6")
          .arg(title)
          .arg(blocks)
          .arg(pic.grid_barriers)
          .arg(double(pic.global_bytes_read) / 1024, 0, 'f', 1)
          .arg(double(pic.global_bytes_written) / 1024, 0, 'f', 1)
          .arg(acc.blocks.empty() ? QString() : tr(" by the recorded blocks")));
  QStringList notes;
  for (const std::string& n : pic.notes) notes << QString::fromStdString(n);
  m_notes->setText(notes.join(QLatin1Char('\n')));
  m_canvas->setPicture(m_result.picture);
  {
    const QSignalBlocker b(m_slider);
    m_slider->setMaximum(int(pic.frames.size()) - 1);
    m_slider->setValue(-1);
  }
  updateFrameLabel();
  m_canvas->repaint();
  m_showMs = double(m_clock.nsecsElapsed()) / 1e6;
  m_ready = true;
  emit ready();
}

int MemoryPanel::frameCount() const {
  return m_result.picture ? int(m_result.picture->frames.size()) : 0;
}

int MemoryPanel::frame() const {
  return m_canvas->frame();
}

bool MemoryPanel::isPlaying() const {
  return m_timer->isActive();
}

void MemoryPanel::play() {
  if (frameCount() == 0) return;
  if (frame() + 1 >= frameCount()) setFrame(-1);
  m_timer->start();
  m_playButton->setText(tr("Pause"));
}

void MemoryPanel::pause() {
  m_timer->stop();
  m_playButton->setText(tr("Play"));
}

void MemoryPanel::step(int by) {
  pause();
  setFrame(std::clamp(frame() + by, -1, frameCount() - 1));
}

void MemoryPanel::setFrame(int f) {
  m_canvas->setFrame(f);
  const QSignalBlocker b(m_slider);
  m_slider->setValue(m_canvas->frame());
  updateFrameLabel();
}

void MemoryPanel::updateFrameLabel() {
  const report::MemoryPicture* pic = m_result.picture.get();
  if (!pic) {
    m_frameLabel->clear();
    return;
  }
  const int f = frame();
  if (f < 0) {
    m_frameLabel->setText(
        tr("The whole recording (%1 frames: each block in each phase). Play or step to see it "
           "block by block; blue: read, red: written.")
            .arg(pic->frames.size()));
    return;
  }
  const report::PictureFrame& fr = pic->frames[size_t(f)];
  QString text = tr("Frame %1 of %2: %3")
                     .arg(f + 1)
                     .arg(pic->frames.size())
                     .arg(QString::fromStdString(fr.label));
  if (fr.after_barrier) text += tr(" — after a grid barrier");
  if (!fr.waits_for.empty()) {
    QStringList blocks;
    std::set<std::string> tensors;
    for (const auto& [tensor, block] : fr.waits_for) {
      if (blocks.size() < 12) blocks << QString::number(block);
      tensors.insert(tensor);
    }
    QStringList tn;
    for (const std::string& s : tensors) tn << QString::fromStdString(s);
    text += tr(". Waits for producer block(s) %1%2 (their tiles dashed orange) of %3")
                .arg(blocks.join(QStringLiteral(", ")),
                     fr.waits_for.size() > 12 ? QStringLiteral(", …") : QString(),
                     tn.join(QStringLiteral(", ")));
  }
  m_frameLabel->setText(text);
}

}  // namespace souffle::views
