/// \file Item model over the kernels of a plan: id, kind, TEs, stages, syncs, FLOPs, DRAM
/// bytes and estimated time.
#pragma once

#include "views/compile_runner.h"
#include "views/imported_profile.h"
#include "views/kernel_stages.h"
#include "views/plan_runner.h"
#include "views/profile_runner.h"
#include "views/table_model.h"

namespace souffle::views {

class PartitionTableModel : public TableModel {
  Q_OBJECT
 public:
  enum Column {
    KernelColumn,
    KindColumn,
    TeColumn,
    StageColumn,
    SyncColumn,
    FlopColumn,
    DramColumn,
    TimeColumn,
    ShareColumn,     ///< the kernel's share of the plan's estimated time
    MeasuredColumn,  ///< after a profile: median µs (GPU, or the emulator's CPU time)
    RegisterColumn,  ///< after a compile: registers per thread, sm_80 / sm_90
    SharedColumn,    ///< after a compile: shared memory per block
    SpillColumn,     ///< after a compile: spill bytes (stores + loads)
    ColumnCount
  };
  enum Role {
    PartitionRole = FirstCustomRole,  ///< index into FusionPlan::partitions
  };

  explicit PartitionTableModel(QObject* parent = nullptr);
  void setPlan(PlanDataPtr plan);
  PlanDataPtr plan() const { return m_plan; }
  /// Compile results of the plan shown (ignored when they belong to another plan).
  void setCompile(CompileDataPtr compile);
  CompileDataPtr compile() const { return m_compile; }
  /// Measurements of the plan shown (ignored when they belong to another plan).
  void setProfile(ProfileDataPtr profile);
  ProfileDataPtr profile() const { return m_profile; }
  /// Kernel times of an imported profile (shown when no profile run of the plan is).
  void setImported(ExternalProfileDataPtr imported);

 protected:
  int rows() const override;
  int columns() const override { return ColumnCount; }
  QVariant cell(int row, int column, int role) const override;
  QString header(int column) const override;
  QString headerTip(int column) const override;

 private:
  QVariant compileData(const plan::Partition& k, int row, int column, int role) const;
  PlanDataPtr m_plan;
  CompileDataPtr m_compile;
  ProfileDataPtr m_profile;
  ExternalProfileDataPtr m_imported;
};

/// The Stages cell's tool tip (the column shows kernelStages): the kernel's stages beside the
/// planned ones.
QString stageTip(const plan::Partition& k);

/// "1.2 G", "340 M", "12 k" (base 1000, FLOPs) or "1.5 MiB" (bytes).
QString compactCount(double v);
QString compactBytes(double v);
/// `us` microseconds with three significant digits in the unit that fits: "12.3 s", "845 ms",
/// "1.23 ms", "12.3 µs" (an emulator's CPU times run to millions of µs).
QString timeWithUnit(double us);
/// The change from `beforeUs` to `afterUs`: "−5.1 µs, −2.9%", "+0.4 µs, +0.2%", "no change".
QString estimateDelta(double beforeUs, double afterUs);

}  // namespace souffle::views
