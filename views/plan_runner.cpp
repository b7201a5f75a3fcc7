#include "views/plan_runner.h"

#include <mutex>

#include <QHash>
#include <QtConcurrent/QtConcurrent>
#include <algorithm>
#include <exception>

#include "core/schedule/plan_pricer.h"
#include "core/session/kernel_cache.h"
#include "core/session/pipeline.h"

namespace souffle::views {

namespace {

struct PlanCancelled : std::exception {
  const char* what() const noexcept override { return "planning cancelled"; }
};

/// The plan's pricer, counted: each price is one step of the pricing the GUI reports, and a
/// cancelled plan stops at its next one.
class WatchedPricer : public plan::KernelPricer {
 public:
  WatchedPricer(std::shared_ptr<const plan::KernelPricer> inner,
                std::shared_ptr<PlanProgress> progress)
      : m_inner(std::move(inner)),
        m_builds(dynamic_cast<const schedule::PlanPricer*>(m_inner.get())),
        m_progress(std::move(progress)) {}
  plan::PartitionPrice price(const plan::FusionPlan& context,
                             const plan::Partition& p) const override {
    if (m_progress->cancel) throw PlanCancelled();
    const size_t before = m_builds ? m_builds->builds() : 0;
    plan::PartitionPrice out = m_inner->price(context, p);
    ++m_progress->priced;
    if (m_builds && m_builds->builds() > before) ++m_progress->built;
    return out;
  }
  std::string constants() const override { return m_inner->constants(); }

 private:
  std::shared_ptr<const plan::KernelPricer> m_inner;
  const schedule::PlanPricer* m_builds;
  std::shared_ptr<PlanProgress> m_progress;
};

void addUnique(std::vector<int>& v, int k) {
  auto it = std::lower_bound(v.begin(), v.end(), k);
  if (it == v.end() || *it != k) v.insert(it, k);
}

}  // namespace

std::vector<int> PlanData::boxesOf(bool teLevel, int kernel) const {
  std::vector<int> boxes;
  const auto& ks = kernelsOf(teLevel);
  for (size_t b = 0; b < ks.size(); ++b)
    if (std::binary_search(ks[b].begin(), ks[b].end(), kernel)) boxes.push_back(int(b));
  return boxes;
}

PlanDataPtr buildPlanData(ModelDataPtr model, std::shared_ptr<const plan::FusionPlan> p) {
  auto d = std::make_shared<PlanData>();
  d->model = model;
  d->plan = p;
  d->strategy = QString::fromLatin1(plan::strategy_name(p->strategy));
  d->gpu = QString::fromStdString(p->gpu);
  d->identities = kernelIdentities(*p);
  // Partitions name TEs of the transformed program; boxes stand for ONNX nodes (op level) or
  // TEs of the input program (TE level). A TE that a horizontal or vertical transformation
  // replaced takes the kernels of the TE that replaced it (followed through chained sites).
  QHash<QString, std::vector<int>> byTe;
  for (size_t k = 0; k < p->partitions.size(); ++k)
    for (int te : p->partitions[k].tes)
      addUnique(byTe[QString::fromStdString(p->program.ops[te]->name)], int(k));
  QHash<QString, QString> replacedBy;
  for (const plan::TransformSite& site : p->transforms)
    if (site.applied && !site.result.empty())
      for (const std::string& op : site.ops)
        if (op != site.result)
          replacedBy.insert(QString::fromStdString(op), QString::fromStdString(site.result));
  // The built stages each TE of the transformed program computes in.
  QHash<QString, std::vector<BoxStages>> stagesOfTe;
  for (size_t k = 0; k < p->partitions.size(); ++k) {
    const plan::Partition& part = p->partitions[k];
    for (size_t s = 0; s < part.built_stages.size(); ++s)
      for (const std::string& te : part.built_stages[s].tes) {
        std::vector<BoxStages>& v = stagesOfTe[QString::fromStdString(te)];
        auto it = std::find_if(v.begin(), v.end(),
                               [&](const BoxStages& b) { return b.partition == int(k); });
        if (it == v.end())
          v.push_back({int(k), int(s), int(s)});
        else
          it->last = std::max(it->last, int(s));
      }
  }
  auto resolved = [&](QString name) {
    for (int hops = 0; hops < 64; ++hops) {  // bounded: a cycle would be a bug, not a hang
      if (byTe.contains(name)) return name;
      auto r = replacedBy.constFind(name);
      if (r == replacedBy.constEnd()) break;
      name = *r;
    }
    return QString();
  };
  auto kernelsOfTe = [&](const QString& name) { return byTe.value(resolved(name)); };
  auto addStages = [](std::vector<BoxStages>& into, const std::vector<BoxStages>& from) {
    for (const BoxStages& s : from) {
      auto it = std::find_if(into.begin(), into.end(),
                             [&](const BoxStages& b) { return b.partition == s.partition; });
      if (it == into.end()) {
        into.push_back(s);
      } else {
        it->first = std::min(it->first, s.first);
        it->last = std::max(it->last, s.last);
      }
    }
  };
  QHash<QString, std::vector<BoxStages>> stagesOfNode, stagesOfInputTe;
  for (const te::Op& op : model->model->program.ops) {
    const QString name = QString::fromStdString(op->name);
    const std::vector<BoxStages> st = stagesOfTe.value(resolved(name));
    stagesOfInputTe.insert(name, st);
    addStages(stagesOfNode[QString::fromStdString(op->origin.node)], st);
  }
  QHash<QString, std::vector<int>> byNode, ofInputTe;
  for (const te::Op& op : model->model->program.ops) {
    const std::vector<int> ks = kernelsOfTe(QString::fromStdString(op->name));
    ofInputTe.insert(QString::fromStdString(op->name), ks);
    std::vector<int>& nk = byNode[QString::fromStdString(op->origin.node)];
    for (int k : ks) addUnique(nk, k);
  }
  const SceneGraph& og = model->opGraph;
  d->opKernels.resize(og.nodes.size());
  for (size_t b = 0; b < og.nodes.size(); ++b)
    if (og.nodes[b].kind == SceneNode::Kind::Op)
      d->opKernels[b] = byNode.value(og.nodes[b].onnxNode);
  const SceneGraph& tg = model->teGraph;
  d->teKernels.resize(tg.nodes.size());
  for (size_t b = 0; b < tg.nodes.size(); ++b)
    if (tg.nodes[b].kind == SceneNode::Kind::TeOp)
      d->teKernels[b] = ofInputTe.value(tg.nodes[b].subtitle);
  // Stage boundaries on the edges inside kernels.
  std::vector<std::vector<BoxStages>> opStages(og.nodes.size()), teStages(tg.nodes.size());
  for (size_t b = 0; b < og.nodes.size(); ++b)
    if (og.nodes[b].kind == SceneNode::Kind::Op)
      opStages[b] = stagesOfNode.value(og.nodes[b].onnxNode);
  for (size_t b = 0; b < tg.nodes.size(); ++b)
    if (tg.nodes[b].kind == SceneNode::Kind::TeOp)
      teStages[b] = stagesOfInputTe.value(tg.nodes[b].subtitle);
  d->opEdgeKinds = boundaryEdgeKinds(og, *p, opStages);
  d->teEdgeKinds = boundaryEdgeKinds(tg, *p, teStages);
  return d;
}

PlanRunner::PlanRunner(QObject* parent)
    : QObject(parent),
      m_watcher(new QFutureWatcher<PlanOutcome>(this)),
      m_ticker(new QTimer(this)) {
  m_ticker->setInterval(300);
  connect(m_ticker, &QTimer::timeout, this, [this] {
    if (!m_busy || !m_progress) return;
    const int priced = m_progress->priced, built = m_progress->built;
    emit progress(tr("%1: %2 partition%3 priced (%4 built), %5 s")
                      .arg(m_what)
                      .arg(priced)
                      .arg(priced == 1 ? QString() : QStringLiteral("s"))
                      .arg(built)
                      .arg(static_cast<double>(m_timer.elapsed()) / 1000, 0, 'f', 0));
  });
  connect(m_watcher, &QFutureWatcher<PlanOutcome>::finished, this, [this] {
    if (m_watcher->property("generation").toULongLong() != m_generation || !m_busy) return;
    m_busy = false;
    m_ticker->stop();
    PlanOutcome out = m_watcher->result();
    if (out.cancelled) return;
    if (out.ok()) {
      auto d = std::make_shared<PlanData>(*out.data);
      d->ms = static_cast<double>(m_timer.nsecsElapsed()) / 1e6;
      emit planned(d);
    } else {
      emit failed(out.error);
    }
  });
}

PlanRunner::~PlanRunner() {
  if (m_progress) m_progress->cancel = true;
  m_watcher->waitForFinished();
}

namespace {
std::mutex g_calibration_mutex;
std::optional<gpu::Calibration> g_calibration;
}  // namespace

void PlanRunner::setCalibration(std::optional<gpu::Calibration> calibration) {
  std::lock_guard<std::mutex> lock(g_calibration_mutex);
  g_calibration = std::move(calibration);
}

std::optional<gpu::Calibration> PlanRunner::calibration() {
  std::lock_guard<std::mutex> lock(g_calibration_mutex);
  return g_calibration;
}

PipelineOptions PlanRunner::options(plan::Strategy strategy, const QString& gpu,
                                    const plan::Decisions& decisions, gpu::Precision precision,
                                    SyncMode sync) {
  PipelineOptions po;
  po.strategy = strategy;
  po.gpu = gpu::gpu_spec(gpu.toStdString());
  po.precision = precision;
  po.sync = sync;
  po.decisions = decisions;
  // What the pricing builds stays in the session's kernel cache: the code panel and compile
  // then build nothing for a planned partition.
  shared_kernel_cache().attach(po.gpu, po.precision);
  // A calibration prices with its measured constants (the plan's cost_constants say which).
  if (std::optional<gpu::Calibration> c = calibration())
    po.pricer = schedule::shared_pricer(po.gpu, po.precision, *c);
  return po;
}

PlanOutcome PlanRunner::run(ModelDataPtr model, plan::Strategy strategy, const QString& gpu,
                            gpu::Precision precision) {
  PlanOutcome out;
  try {
    const PipelineOptions o = options(strategy, gpu, {}, precision);
    auto p = std::make_shared<plan::FusionPlan>(run_pipeline(*model->model, o).plan);
    out.data = buildPlanData(model, std::move(p));
  } catch (const UserError& e) {
    out.error = QString::fromStdString(e.reason());
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
  }
  return out;
}

void PlanRunner::start(ModelDataPtr model, plan::Strategy strategy, const QString& gpu) {
  start(std::move(model), strategy, gpu, {}, {});
}

PlanOutcome PlanRunner::runWith(ModelDataPtr model, plan::Strategy strategy, const QString& gpu,
                                const plan::Decisions& decisions, PlanDataPtr previous,
                                gpu::Precision precision, std::shared_ptr<PlanProgress> progress,
                                SyncMode sync) {
  PlanOutcome out;
  try {
    PipelineOptions o = options(strategy, gpu, decisions, precision, sync);
    if (progress) o.pricer = std::make_shared<WatchedPricer>(plan_options(o).pricer, progress);
    // The same model planned again reuses the previous plan's transformed program.
    if (previous && previous->model == model) o.previous = previous->plan;
    auto p = std::make_shared<plan::FusionPlan>(run_pipeline(*model->model, o).plan);
    out.data = buildPlanData(model, std::move(p));
  } catch (const PlanCancelled&) {
    out.cancelled = true;
  } catch (const UserError& e) {
    out.error = QString::fromStdString(e.reason());
  } catch (const std::exception& e) {
    out.error = QString::fromUtf8(e.what());
  }
  return out;
}

void PlanRunner::start(ModelDataPtr model, plan::Strategy strategy, const QString& gpu,
                       const plan::Decisions& decisions, PlanDataPtr previous,
                       gpu::Precision precision, SyncMode sync) {
  // One plan at a time: the one in flight stops at its next price.
  if (m_progress) m_progress->cancel = true;
  m_progress = std::make_shared<PlanProgress>();
  ++m_generation;
  m_busy = true;
  m_what = tr("Planning %1 on %2").arg(QString::fromLatin1(plan::strategy_name(strategy)), gpu);
  m_timer.start();
  m_ticker->start();
  m_watcher->setProperty("generation", m_generation);
  m_watcher->setFuture(QtConcurrent::run(&PlanRunner::runWith, std::move(model), strategy, gpu,
                                         decisions, std::move(previous), precision, m_progress,
                                         sync));
}

void PlanRunner::cancel() {
  if (!m_busy) return;
  if (m_progress) m_progress->cancel = true;
  ++m_generation;
  m_busy = false;
  m_ticker->stop();
  QMetaObject::invokeMethod(this, &PlanRunner::cancelled, Qt::QueuedConnection);
}

}  // namespace souffle::views
