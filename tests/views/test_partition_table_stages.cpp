// The Kernels table's Stages column and the plan JSON's kernel_stages count the stages of the
// kernels built for each partition (loop::Kernel::stages over its launches), not the planner's
// grouping of TEs between grid syncs (plan::Partition::stages), which on sample BERT and LSTM
// is fewer: a GEMM with transposes after it, or a LayerNorm's mean and variance, are one planned
// stage and several kernel stages. The graph's kernel cluster labels count the same.
#include <QtTest>
#include <map>
#include <memory>
#include <string>

#include "core/gpu/spec.h"
#include "core/session/pipeline.h"
#include "core/session/plan_json.h"
#include "views/cluster_items.h"
#include "views/partition_table_model.h"

using namespace souffle;
using souffle::views::PartitionTableModel;

class TestPartitionTableStages : public QObject {
  Q_OBJECT
 private slots:
  void kernelStagesAreTheBuiltKernels_data();
  void kernelStagesAreTheBuiltKernels();
};

void TestPartitionTableStages::kernelStagesAreTheBuiltKernels_data() {
  QTest::addColumn<QString>("model");
  QTest::newRow("bert") << QStringLiteral("bert");
  QTest::newRow("lstm") << QStringLiteral("lstm");
}

void TestPartitionTableStages::kernelStagesAreTheBuiltKernels() {
  QFETCH(QString, model);
  const std::string path =
      std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + model.toStdString() + "/model.onnx";
  PipelineOptions o;
  o.gpu = gpu::gpu_spec("a100");
  o.until = Step::BuildKernels;
  PipelineResult r = run_pipeline(path, o);
  QVERIFY(!r.plan.partitions.empty());
  QVERIFY(!r.kernels.kernels.empty());

  // The stages of the kernels compile would emit, summed over each partition's launches.
  std::map<int, int> built;
  for (const CompiledKernel& k : r.kernels.kernels) {
    QVERIFY2(k.error.empty(), k.error.c_str());
    built[k.partition] += static_cast<int>(k.kernel.stages.size());
  }

  auto data = std::make_shared<views::PlanData>();
  data->plan = std::make_shared<const plan::FusionPlan>(r.plan);
  PartitionTableModel table;
  table.setPlan(data);
  QCOMPARE(table.rowCount(), static_cast<int>(r.plan.partitions.size()));
  const nlohmann::json j = plan_json(path, r.plan);
  // The graph's kernel clusters are labelled with the same count.
  const QHash<int, QString> labels = views::clusterLabels(r.plan, {});

  bool fewerPlanned = false;
  for (size_t i = 0; i < r.plan.partitions.size(); ++i) {
    const plan::Partition& p = r.plan.partitions[i];
    QVERIFY2(p.priced, p.build_error.c_str());
    const int kernel = built.at(p.id);
    const int row = static_cast<int>(i);
    QCOMPARE(table.data(table.index(row, PartitionTableModel::StageColumn)).toInt(), kernel);
    QCOMPARE(j["partitions"][i]["kernel_stages"].get<int>(), kernel);
    // The planner's stages stay what they were, under "stages".
    QCOMPARE(static_cast<int>(j["partitions"][i]["stages"].size()),
             static_cast<int>(p.stages.size()));
    const QString tip =
        table.data(table.index(row, PartitionTableModel::StageColumn), Qt::ToolTipRole).toString();
    QVERIFY2(
        tip.startsWith(QString::number(kernel) + QStringLiteral(" stages in its built kernel")),
        qPrintable(tip));
    QVERIFY2(tip.contains(QString::number(p.stages.size()) + QStringLiteral(" stages between")),
             qPrintable(tip));
    const QString label = labels.value(p.id);
    QVERIFY2(label.contains(QStringLiteral(" · %1 stage").arg(kernel)), qPrintable(label));
    fewerPlanned = fewerPlanned || static_cast<int>(p.stages.size()) < kernel;
  }
  // Both models have a kernel whose planned stages are fewer than its kernel's: the column
  // would show another number if it still counted the plan's.
  QVERIFY(fewerPlanned);
}

QTEST_GUILESS_MAIN(TestPartitionTableStages)
#include "test_partition_table_stages.moc"
