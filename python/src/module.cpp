// The `souffle._core` extension: the pipeline of core/ (load, plan, edit, compile, verify,
// profile, report) for Python. It hands structured results over as JSON text, which the pure
// Python layer (python/souffle) turns into dicts and objects, and NumPy arrays in and out of the
// emulator. The GIL is released around every long step; progress reaches a Python callable.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/analysis/analysis.h"
#include "core/emulate/emulate.h"
#include "core/gpu/compile_cache.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/graph/graph.h"
#include "core/plan/decisions.h"
#include "core/plan/plan.h"
#include "core/report/dot.h"
#include "core/report/html.h"
#include "core/report/report_model.h"
#include "core/report/svg.h"
#include "core/report/write.h"
#include "core/schedule/price_store.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/session/pipeline.h"
#include "core/session/plan_json.h"
#include "core/session/profile.h"
#include "core/session/verify.h"
#include "core/session/verify_kernels.h"
#include "core/support/error.h"
#include "core/te/printer.h"

namespace py = pybind11;
using nlohmann::json;

namespace souffle::python {
namespace {

/// Calls a Python progress callable (may be None) with the GIL held; its exceptions are dropped
/// so that a failing callback never aborts the work it watches.
struct Progress {
  py::object fn;
  void operator()(const std::string& step) const {
    if (fn.is_none()) return;
    py::gil_scoped_acquire gil;
    try {
      fn(step);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable(__func__);
    }
  }
};

/// A loaded model and how it was imported (the options travel with every plan of it).
struct Model {
  std::string path;  ///< the file, or the name given to bytes
  std::string bytes;
  onnx_import::ImportOptions import;
  std::vector<std::string> bind_text, shape_text;  ///< as given, recorded in bundles
  LoadedModel loaded;
  std::vector<plan::PassRecord> passes;  ///< import, fold, lower
};

/// A plan with everything needed to make it again (edits replan from these options).
struct Plan {
  std::shared_ptr<const Model> model;
  PipelineOptions options;  ///< strategy, gpu, precision, sync, decisions (import unused)
  plan::FusionPlan plan;
};

/// The pipeline's first three steps as `plan` runs them (run_pipeline), each timed, so a plan's
/// JSON lists the same steps.
void load_steps(Model& m, const std::string* bytes, const Progress& progress) {
  PipelineOptions po;
  po.import = m.import;
  po.until = plan::Step::Lower;
  po.instrument.after = [&progress](const plan::PassRecord& r) { progress(std::string(r.name())); };
  PipelineResult r = bytes ? run_pipeline_bytes(*bytes, m.path, po) : run_pipeline(m.path, po);
  m.loaded = std::move(r.model);
  m.passes.insert(m.passes.end(), r.passes.begin(), r.passes.end());
}

std::shared_ptr<Model> load(const std::string& path, const py::object& data,
                            const std::map<std::string, int64_t>& dims,
                            const std::vector<std::string>& binds,
                            const std::vector<std::string>& shapes, const py::object& progress) {
  auto m = std::make_shared<Model>();
  m->path = path;
  m->import.dims = dims;
  for (const std::string& b : binds) {
    auto [name, value] = onnx_import::parse_binding(b);
    if (m->import.bind.count(name)) throw UserError("bind: input '" + name + "' given twice");
    m->import.bind[name] = value;
  }
  for (const std::string& s : shapes) {
    auto [name, shape] = onnx_import::parse_shape(s);
    m->import.shapes[name] = shape;
  }
  m->bind_text = binds;
  m->shape_text = shapes;
  const bool from_bytes = !data.is_none();
  if (from_bytes) m->bytes = data.cast<std::string>();
  Progress p{progress};
  {
    py::gil_scoped_release release;
    load_steps(*m, from_bytes ? &m->bytes : nullptr, p);
  }
  return m;
}

json graph_json(const graph::Graph& g) {
  json nodes = json::array();
  for (const graph::Node& n : g.nodes)
    nodes.push_back({{"name", n.name},
                     {"op_type", n.op_type},
                     {"domain", n.domain},
                     {"inputs", n.inputs},
                     {"outputs", n.outputs}});
  json tensors = json::object();
  for (const auto& [name, v] : g.values) {
    json t = {{"dtype", dtype_name(v.type.dtype)},
              {"shape", v.type.shape},
              {"constant", v.constant != nullptr}};
    tensors[name] = t;
  }
  return {{"name", g.name},       {"opset", g.opset}, {"inputs", g.inputs},
          {"outputs", g.outputs}, {"nodes", nodes},   {"tensors", tensors}};
}

json analysis_json(const analysis::Analysis& a) {
  json tes = json::array();
  for (const analysis::TeInfo& t : a.tes)
    tes.push_back({{"name", t.name},
                   {"node", t.origin_node},
                   {"op_type", t.origin_op},
                   {"shape", t.shape},
                   {"kind", analysis::intensity_name(t.kind)},
                   {"kind_reason", t.kind_reason},
                   {"flops", t.flops},
                   {"bytes_read", t.bytes_read},
                   {"bytes_written", t.bytes_written},
                   {"arithmetic_intensity", t.arithmetic_intensity},
                   {"reduction", t.is_reduction},
                   {"contraction", t.is_contraction},
                   {"view", t.is_pure_view},
                   {"level", t.level}});
  json reuse = json::array();
  for (const analysis::ReuseSite& r : a.reuse)
    reuse.push_back({{"kind", analysis::reuse_kind_name(r.kind)},
                     {"tensor", r.name},
                     {"bytes", r.bytes},
                     {"readers", r.readers}});
  return {{"tes", tes},
          {"reuse", reuse},
          {"total_flops", a.total_flops},
          {"total_bytes", a.total_bytes},
          {"compute_intensive", a.compute_intensive},
          {"memory_intensive", a.memory_intensive},
          {"pure_views", a.pure_views}};
}

std::string model_info(const Model& m) {
  const LoadedModel& lm = m.loaded;
  json passes = json::array();
  for (const plan::PassRecord& r : m.passes)
    passes.push_back({{"name", std::string(r.name())}, {"ms", r.ms}});
  json j = {{"path", m.path},
            {"onnx_nodes", lm.onnx_nodes},
            {"nodes", lm.graph.nodes.size()},
            {"folded", lm.stats.nodes_folded},
            {"tes", lm.program.ops.size()},
            {"warnings", lm.warnings},
            {"load_ms", lm.load_ms},
            {"passes", passes}};
  // The ONNX graph's inputs and outputs, as `souffle-cli inspect --json` gives them, and the TE
  // program's (its tensors' names: an output is the TE that computes it, an input left bound is
  // not one).
  auto value = [&](const std::string& n) {
    const graph::Value& v = lm.graph.value(n);
    return json{{"name", v.name}, {"dtype", dtype_name(v.type.dtype)}, {"shape", v.type.shape}};
  };
  auto tensor = [](const te::Tensor& t) {
    return json{{"name", t->name}, {"dtype", dtype_name(t->dtype)}, {"shape", t->shape}};
  };
  json ins = json::array(), outs = json::array(), te_ins = json::array(), te_outs = json::array();
  for (const std::string& n : lm.graph.inputs) ins.push_back(value(n));
  for (const std::string& n : lm.graph.outputs) outs.push_back(value(n));
  for (const te::Tensor& t : lm.program.inputs) te_ins.push_back(tensor(t));
  for (const te::Tensor& t : lm.program.outputs) te_outs.push_back(tensor(t));
  j["inputs"] = ins;
  j["outputs"] = outs;
  j["te_inputs"] = te_ins;
  j["te_outputs"] = te_outs;
  return j.dump();
}

/// The plan options of a Python call; UserError for an unknown name.
PipelineOptions pipeline_options(const std::string& strategy, const std::string& gpu,
                                 const std::string& precision, const std::string& sync,
                                 const std::string& decisions_json, bool waves,
                                 bool weight_panels) {
  PipelineOptions po;
  po.strategy = plan::parse_strategy(strategy);
  po.gpu = gpu::gpu_spec(gpu);
  po.precision = gpu::parse_precision(precision);
  if (!parse_sync_mode(sync, po.sync)) throw UserError("sync '" + sync + "': grid, flags or auto");
  po.waves = waves;
  po.weight_panels = weight_panels;
  if (!decisions_json.empty()) po.decisions = plan::parse_decisions(decisions_json, "decisions");
  return po;
}

/// Whether plans take prices from the cache folder's price cache (souffle.price_cache).
bool g_price_cache = true;

/// The price cache of the cache folder the environment names now (a sweep's worker points
/// SOUFFLE_CACHE_DIR at a shared folder after the package is imported), or none when off.
void use_price_cache() {
  std::shared_ptr<schedule::PriceStore> now = schedule::default_price_store();
  if (!g_price_cache) {
    if (now) schedule::set_default_price_store(nullptr);
    return;
  }
  const std::string dir = gpu::default_compile_cache_dir();
  if (now && now->disk().dir() == dir) return;
  schedule::set_default_price_store(schedule::open_user_price_store(
      [](const std::string& w) { std::fprintf(stderr, "souffle: warning: %s\n", w.c_str()); }));
}

std::shared_ptr<Plan> make_plan(std::shared_ptr<const Model> model, PipelineOptions po,
                                const py::object& progress) {
  use_price_cache();
  auto p = std::make_shared<Plan>();
  p->model = std::move(model);
  Progress report{progress};
  po.instrument.after = [&report](const plan::PassRecord& r) { report(std::string(r.name())); };
  {
    py::gil_scoped_release release;
    p->plan = run_pipeline(p->model->loaded, po).plan;
  }
  po.instrument = {};
  p->options = std::move(po);
  return p;
}

std::shared_ptr<Plan> plan_model(const std::shared_ptr<Model>& m, const std::string& strategy,
                                 const std::string& gpu, const std::string& precision,
                                 const std::string& sync, const std::string& decisions_json,
                                 bool waves, bool weight_panels, const py::object& progress) {
  return make_plan(
      m, pipeline_options(strategy, gpu, precision, sync, decisions_json, waves, weight_panels),
      progress);
}

/// plan --json: the plan's object with the load's figures and the whole pipeline's steps.
std::string plan_to_json(const Plan& p, const std::string& model_name) {
  json j = plan_json(model_name.empty() ? p.model->path : model_name, p.plan);
  j["load_ms"] = p.model->loaded.load_ms;
  j["precision"] = gpu::precision_name(p.plan.precision);
  json passes = json::array();
  for (const plan::PassRecord& r : p.model->passes)
    passes.push_back({{"name", std::string(r.name())}, {"ms", r.ms}});
  for (const plan::PassRecord& r : p.plan.passes)
    passes.push_back({{"name", std::string(r.name())}, {"ms", r.ms}});
  j["passes"] = passes;
  return j.dump(2) + "\n";  // as `plan --json` prints it
}

/// The plan again with `edits` (decisions JSON) added after its own. The new plan's refusals of
/// the added edits come back as [edit text, reason] pairs; the caller raises.
py::tuple edit_plan(const std::shared_ptr<Plan>& p, const std::string& edits_json,
                    const py::object& progress) {
  plan::Decisions add = plan::parse_decisions(edits_json, "edit");
  PipelineOptions po = p->options;
  const size_t before = po.decisions.edits.size();
  for (const plan::Edit& e : add.edits) po.decisions.edits.push_back(e);
  std::shared_ptr<Plan> next = make_plan(p->model, po, progress);
  std::vector<std::pair<std::string, std::string>> refused;
  for (const plan::RefusedEdit& r : next->plan.refused)
    for (size_t k = before; k < po.decisions.edits.size(); ++k)
      if (r.edit == po.decisions.edits[k]) {
        refused.push_back({plan::describe(r.edit), r.reason});
        break;
      }
  return py::make_tuple(next, refused);
}

json compiled_kernel_json(const CompiledKernel& k) {
  json per_arch = json::array();
  for (const gpu::CompileResult& r : k.per_arch) {
    json a = {
        {"arch", r.arch}, {"ok", r.ok}, {"from_cache", r.from_cache}, {"compile_ms", r.compile_ms}};
    if (const gpu::KernelResources* res = r.find_kernel(k.name)) {
      a["registers"] = res->registers;
      a["shared_bytes"] = res->shared_bytes;
      a["spill_store_bytes"] = res->spill_store_bytes;
      a["spill_load_bytes"] = res->spill_load_bytes;
    }
    if (!r.ok) a["error"] = r.error;
    per_arch.push_back(a);
  }
  json j = {{"name", k.name},
            {"partition", k.partition},
            {"ok", k.ok()},
            {"grid", k.launch.grid_x},
            {"block", k.launch.block_x},
            {"dynamic_shared_bytes", k.launch.dynamic_shared_bytes},
            {"cooperative", k.launch.cooperative},
            {"co_resident", k.co_resident},
            {"register_cap", k.register_cap},
            {"registers", k.max_registers()},
            {"spill_bytes", k.spill_bytes()},
            {"per_arch", per_arch}};
  if (!k.ok()) j["error"] = k.error;
  return j;
}

std::pair<std::string, std::map<std::string, std::string>> compile_plan_py(
    const Plan& p, const std::vector<std::string>& archs, int threads, bool use_cache) {
  for (const std::string& a : archs) check_arch(a);
  CompileOptions co;
  co.archs = archs;
  co.threads = threads;
  co.gpu = p.options.gpu;
  co.use_cache = use_cache;
  co.sync = p.plan.sync;
  CompileReport rep;
  {
    py::gil_scoped_release release;
    rep = compile_plan(p.plan, co);
  }
  json kernels = json::array();
  std::map<std::string, std::string> cuda;
  for (const CompiledKernel& k : rep.kernels) {
    kernels.push_back(compiled_kernel_json(k));
    cuda[k.name] = k.cuda;
  }
  json j = {{"kernels", kernels},           {"archs", archs},       {"build_ms", rep.build_ms},
            {"compile_ms", rep.compile_ms}, {"errors", rep.errors}, {"ok", rep.ok()}};
  return {j.dump(), cuda};
}

// ---------------------------------------------------------------- NumPy <-> tensors

DType dtype_of(const py::dtype& d) {
  const char kind = d.kind();
  const ssize_t size = d.itemsize();
  if (kind == 'f' && size == 4) return DType::Float32;
  if (kind == 'f' && size == 8) return DType::Float64;
  if (kind == 'f' && size == 2) return DType::Float16;
  if (kind == 'i' && size == 1) return DType::Int8;
  if (kind == 'i' && size == 2) return DType::Int16;
  if (kind == 'i' && size == 4) return DType::Int32;
  if (kind == 'i' && size == 8) return DType::Int64;
  if (kind == 'u' && size == 1) return DType::UInt8;
  if (kind == 'u' && size == 2) return DType::UInt16;
  if (kind == 'u' && size == 4) return DType::UInt32;
  if (kind == 'u' && size == 8) return DType::UInt64;
  if (kind == 'b') return DType::Bool;
  throw UserError("a NumPy array of dtype " + std::string(py::str(py::handle(d))) +
                  ": no tensor type of that kind");
}

ConstTensorPtr tensor_of(const py::array& a) {
  py::array c = py::array::ensure(a, py::array::c_style);
  const DType t = dtype_of(c.dtype());
  Shape shape(c.shape(), c.shape() + c.ndim());
  std::string bytes(static_cast<const char*>(c.data()), static_cast<size_t>(c.nbytes()));
  return std::make_shared<TensorData>(t, shape, std::move(bytes));
}

py::array array_of(const TensorData& t) {
  std::vector<ssize_t> shape(t.shape().begin(), t.shape().end());
  auto copy = [&](auto tag) {
    using T = decltype(tag);
    py::array_t<T> out(shape);
    std::memcpy(out.mutable_data(), t.raw(), static_cast<size_t>(t.byte_size()));
    return py::array(out);
  };
  switch (t.dtype()) {
    case DType::Float32:
      return copy(float{});
    case DType::Float64:
      return copy(double{});
    case DType::Int8:
      return copy(int8_t{});
    case DType::Int16:
      return copy(int16_t{});
    case DType::Int32:
      return copy(int32_t{});
    case DType::Int64:
      return copy(int64_t{});
    case DType::UInt8:
      return copy(uint8_t{});
    case DType::UInt16:
      return copy(uint16_t{});
    case DType::UInt32:
      return copy(uint32_t{});
    case DType::UInt64:
      return copy(uint64_t{});
    case DType::Bool:
      return copy(bool{});
    case DType::Float16: {
      py::array out(py::dtype("float16"), shape);
      std::memcpy(out.mutable_data(), t.raw(), static_cast<size_t>(t.byte_size()));
      return out;
    }
    case DType::BFloat16: {  // NumPy has no bfloat16: widened to float32
      std::vector<double> v = t.to_f64();
      py::array_t<float> out(shape);
      for (size_t i = 0; i < v.size(); ++i) out.mutable_data()[i] = static_cast<float>(v[i]);
      return py::array(out);
    }
  }
  throw InternalError("array_of: unknown dtype");
}

/// Data sets from Python: a list of (inputs, outputs) pairs of array lists.
std::vector<TestDataSet> data_sets(const py::list& sets) {
  std::vector<TestDataSet> out;
  size_t n = 0;
  for (const py::handle& item : sets) {
    py::tuple pair = item.cast<py::tuple>();
    TestDataSet ds;
    ds.dir = "data_set_" + std::to_string(n++);
    for (const py::handle& a : pair[0].cast<py::list>()) {
      ds.inputs.push_back(tensor_of(a.cast<py::array>()));
      ds.input_values.emplace_back(ds.inputs.back());
    }
    for (const py::handle& a : pair[1].cast<py::list>()) {
      ds.outputs.push_back(tensor_of(a.cast<py::array>()));
      ds.output_values.emplace_back(ds.outputs.back());
    }
    out.push_back(std::move(ds));
  }
  return out;
}

/// verify at level "te" (the plan's transformed program in the interpreter) or "kernels" (the
/// plan's kernels in the emulator), against `sets` (None: the model's folder's data sets).
std::string verify_plan(const Plan& p, const std::string& level, const py::object& sets_obj,
                        std::optional<double> rtol, std::optional<double> atol,
                        const py::object& progress) {
  if (level != "te" && level != "kernels") throw UserError("level '" + level + "': te or kernels");
  std::vector<TestDataSet> sets;
  if (sets_obj.is_none() || py::isinstance<py::str>(sets_obj)) {
    std::string dir = sets_obj.is_none()
                          ? std::filesystem::path(p.model->path).parent_path().string()
                          : sets_obj.cast<std::string>();
    if (dir.empty()) dir = ".";
    sets = read_test_data(dir);
    if (sets.empty()) throw UserError(dir, "", "no test_data_set_N folders with reference data");
    // The inputs the model was loaded with bound leave the data sets, as the CLI's verify
    // drops them (load_for_data).
    const Model& m = *p.model;
    if (!m.import.bind.empty()) {
      onnx_import::ImportOptions plain = m.import;
      plain.bind.clear();
      const std::vector<std::string> inputs =
          (m.bytes.empty() ? onnx_import::import_model(m.path, plain)
                           : onnx_import::import_model_bytes(m.bytes, m.path, plain))
              .graph.inputs;
      std::vector<std::string> names;
      for (const auto& bound : m.import.bind) names.push_back(bound.first);
      for (TestDataSet& ds : sets) bind_from_data(inputs, names, ds);
    }
  } else {
    sets = data_sets(sets_obj.cast<py::list>());
  }
  VerifyOptions vo;
  vo.rtol = rtol;
  vo.atol = atol;
  Progress report{progress};
  if (!progress.is_none()) vo.progress = [&report](const std::string& s) { report(s); };
  json j = {{"model", p.model->path},
            {"level", level},
            {"strategy", plan::strategy_name(p.plan.strategy)}};
  py::gil_scoped_release release;
  if (level == "te") {
    LoadedModel m = p.model->loaded;
    m.program = p.plan.program;
    VerifyReport rep = verify_program(m, sets, vo);
    j["ok"] = rep.ok;
    j["mismatches"] = rep.mismatches;
    j["max_abs"] = rep.max_abs_error;
    j["max_rel"] = rep.max_rel_error;
    j["max_rel_l2"] = rep.max_rel_l2;
    j["run_ms"] = rep.run_ms;
    j["checks"] = output_checks_json(rep.checks);
    return j.dump();
  }
  KernelVerifyReport rep = verify_kernels(p.model->loaded, sets, p.options, vo);
  j["precision"] = gpu::precision_name(p.plan.precision);
  j["kernels"] = rep.kernels;
  j["grid_barriers"] = rep.grid_barriers;
  j["flag_waits"] = rep.flag_waits;
  j["ok"] = rep.ok();
  if (!rep.error.empty()) j["error"] = rep.error;
  j["mismatches"] = rep.outputs.mismatches;
  j["max_abs"] = rep.outputs.max_abs_error;
  j["max_rel"] = rep.outputs.max_rel_error;
  j["max_rel_l2"] = rep.outputs.max_rel_l2;
  j["plan_ms"] = rep.plan_ms;
  j["build_ms"] = rep.build_ms;
  j["run_ms"] = rep.outputs.run_ms;
  j["checks"] = output_checks_json(rep.outputs.checks);
  return j.dump();
}

/// The plan's kernels run in the emulator on `inputs` (arrays in the model's input order); the
/// outputs in the model's output order.
py::list run_plan(const Plan& p, const py::list& inputs) {
  const te::TeProgram& prog = p.plan.program;
  if (inputs.size() != prog.inputs.size())
    throw UserError(p.model->path, "",
                    "the model takes " + std::to_string(prog.inputs.size()) + " inputs, " +
                        std::to_string(inputs.size()) + " given");
  emulate::Buffers in;
  for (size_t k = 0; k < prog.inputs.size(); ++k) {
    ConstTensorPtr t = tensor_of(inputs[k].cast<py::array>());
    if (t->shape() != prog.inputs[k]->shape || t->dtype() != prog.inputs[k]->dtype)
      throw UserError(p.model->path, prog.inputs[k]->name,
                      "input " + std::to_string(k) + " is " + dtype_name(t->dtype()) +
                          shape_str(t->shape()) + ", the model takes " +
                          dtype_name(prog.inputs[k]->dtype) + shape_str(prog.inputs[k]->shape));
    in[prog.inputs[k]->name] = std::make_shared<TensorData>(*t);
  }
  emulate::Buffers got;
  {
    py::gil_scoped_release release;
    // The kernels compile ships: the pipeline's build-kernels step over the plan, with the
    // kernels its pricing built.
    PipelineOptions o = p.options;
    o.compile.pricer = kernel_pricer(plan_options(p.options));
    o.compile.sync = p.options.sync;
    const ShippedKernels shipped = shipped_kernels(p.plan, o);
    if (!shipped.ok()) throw UserError(p.model->path, shipped.failed, shipped.error);
    try {
      got = emulate::run_kernels(shipped.set, in, {});
    } catch (const emulate::EmulationError& e) {
      throw UserError(p.model->path, "", std::string("emulator: ") + e.what());
    }
  }
  py::list out;
  for (const te::Tensor& t : prog.outputs) {
    auto it = got.find(t->name);
    if (it != got.end())
      out.append(array_of(*it->second));
    else if (t->source == te::TensorNode::Source::Constant && t->data)
      out.append(array_of(*t->data));
    else if (t->source == te::TensorNode::Source::Input)
      out.append(array_of(*in.at(t->name)));
    else
      throw InternalError("output " + t->name + " was written by no kernel");
  }
  return out;
}

std::string profile_plan(const Plan& p, const std::string& backend, const std::string& runner,
                         int runs, const std::string& data_dir, const std::string& bundle_dir,
                         double timeout_s) {
  ProfileOptions po;
  po.backend = backend;
  po.runner = runner;
  po.runs = runs > 0 ? runs : (backend == "emulator" ? 1 : 20);
  po.warmup = backend == "emulator" ? 0 : 3;
  po.data_dir = data_dir;
  po.bundle_dir = bundle_dir;
  po.sync = p.options.sync;
  po.timeout_s = timeout_s;
  std::string model_path = p.model->path;
  if (!p.model->bytes.empty() && !std::filesystem::exists(model_path))
    throw UserError(model_path, "", "profiling needs the model as a file (loaded from bytes)");
  py::gil_scoped_release release;
  ProfileSession session(po);
  ProfileReport r = session.profile(model_path, p.plan, p.model->import.dims, p.model->bind_text,
                                    p.model->shape_text);
  json j = profile_report_json(r);
  j["hello"] = session.hello();
  return j.dump();
}

/// A report of the plans given, as gather_report makes one of the strategies it plans.
report::Report report_of(const std::vector<std::shared_ptr<Plan>>& plans, bool code) {
  if (plans.empty()) throw UserError("no plan to report");
  std::vector<const plan::FusionPlan*> ps;
  std::vector<std::string> labels;
  for (const auto& p : plans) {
    ps.push_back(&p->plan);
    labels.push_back(p->options.decisions.edits.empty() ? "" : "edits");
  }
  py::gil_scoped_release release;
  return report::report_of_plans(plans.front()->model->loaded, ps, labels, code);
}

std::string report_write(const std::shared_ptr<Plan>& p, const std::shared_ptr<Plan>& other,
                         const std::string& path) {
  std::vector<std::shared_ptr<Plan>> plans{p};
  if (other) plans.push_back(other);
  const std::string format = report::report_format(path);
  report::Report r = report_of(plans, report::format_has_code(format));
  if (other) r.comparison = report::compare_plans(r.plans, 0, 1, "decisions");
  py::gil_scoped_release release;
  const size_t bytes = report::write_report(r, path);
  return std::to_string(bytes);
}

/// The op graph with the plan's kernels as clusters, as the HTML report draws it.
std::string plan_svg(const std::shared_ptr<Plan>& p) {
  report::Report r = report_of({p}, false);
  py::gil_scoped_release release;
  return report::dot_to_svg(report::to_dot(report::plan_graph(r, &r.plans[0]), false));
}

/// Kernel groups of two plans side by side (report::compare_plans) as JSON rows.
std::string compare_json(const std::shared_ptr<Plan>& a, const std::shared_ptr<Plan>& b) {
  report::Report r = report_of({a, b}, false);
  report::ReportComparison c = report::compare_plans(r.plans, 0, 1, "plans");
  json rows = json::array();
  for (const report::KernelDelta& d : c.rows)
    rows.push_back({{"a", d.a},
                    {"b", d.b},
                    {"ops", d.ops},
                    {"first_op", d.first_op},
                    {"a_us", d.a_us},
                    {"b_us", d.b_us},
                    {"a_bytes", d.a_bytes},
                    {"b_bytes", d.b_bytes},
                    {"a_flops", d.a_flops},
                    {"b_flops", d.b_flops},
                    {"a_syncs", d.a_syncs},
                    {"b_syncs", d.b_syncs},
                    {"same", d.same}});
  return json{{"rows", rows}}.dump();
}

}  // namespace
}  // namespace souffle::python

PYBIND11_MODULE(_core, m) {
  using namespace souffle;
  using namespace souffle::python;
  m.doc() = "Souffle Explorer's compiler pipeline (core/), for the souffle package";

  // UserError and InternalError become the package's exception classes (set from Python, which
  // defines them with their fields); until then, RuntimeError.
  static py::object user_error_type = py::none(), internal_error_type = py::none();
  m.def("_set_error_types", [](py::object user, py::object internal) {
    user_error_type = user;
    internal_error_type = internal;
  });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UserError& e) {
      if (user_error_type.is_none()) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return;
      }
      py::object err = user_error_type(e.what(), e.file(), e.node(), e.reason());
      PyErr_SetObject(user_error_type.ptr(), err.ptr());
    } catch (const InternalError& e) {
      if (internal_error_type.is_none()) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return;
      }
      PyErr_SetObject(internal_error_type.ptr(), py::str(e.what()).ptr());
    }
  });

  py::class_<Model, std::shared_ptr<Model>>(m, "Model")
      .def_property_readonly("path", [](const Model& x) { return x.path; })
      .def("info", &model_info)
      .def("graph", [](const Model& x) { return graph_json(x.loaded.graph).dump(); })
      .def("te_program", [](const Model& x) { return te::print(x.loaded.program); })
      .def("analysis", [](const Model& x) {
        analysis::Analysis a;
        {
          py::gil_scoped_release release;
          a = analysis::analyze(x.loaded.program);
        }
        return analysis_json(a).dump();
      });

  py::class_<Plan, std::shared_ptr<Plan>>(m, "Plan")
      .def("to_json", &plan_to_json, py::arg("model_name") = "")
      .def("decisions", [](const Plan& p) { return plan::to_json(p.options.decisions); })
      .def("text", [](const Plan& p) { return plan::print(p.plan); })
      .def_property_readonly("strategy",
                             [](const Plan& p) { return plan::strategy_name(p.plan.strategy); })
      .def_property_readonly("gpu", [](const Plan& p) { return p.options.gpu.name; })
      .def_property_readonly("precision",
                             [](const Plan& p) { return gpu::precision_name(p.plan.precision); })
      .def_property_readonly("sync", [](const Plan& p) { return sync_mode_name(p.options.sync); })
      .def_property_readonly("model", [](const Plan& p) { return p.model; });

  m.def("load", &load, py::arg("path"), py::arg("data"), py::arg("dims"), py::arg("binds"),
        py::arg("shapes"), py::arg("progress"));
  m.def("plan", &plan_model, py::arg("model"), py::arg("strategy"), py::arg("gpu"),
        py::arg("precision"), py::arg("sync"), py::arg("decisions"), py::arg("waves"),
        py::arg("weight_panels"), py::arg("progress"));
  m.def("edit", &edit_plan, py::arg("plan"), py::arg("edits"), py::arg("progress"));
  m.def("compile", &compile_plan_py, py::arg("plan"), py::arg("archs"), py::arg("threads"),
        py::arg("use_cache"));
  m.def("verify", &verify_plan, py::arg("plan"), py::arg("level"), py::arg("data"), py::arg("rtol"),
        py::arg("atol"), py::arg("progress"));
  m.def("run", &run_plan, py::arg("plan"), py::arg("inputs"));
  m.def("profile", &profile_plan, py::arg("plan"), py::arg("backend"), py::arg("runner"),
        py::arg("runs"), py::arg("data_dir"), py::arg("bundle_dir"), py::arg("timeout_s"));
  m.def("report", &report_write, py::arg("plan"), py::arg("other"), py::arg("path"));
  m.def("plan_svg", &plan_svg, py::arg("plan"));
  m.def("compare", &compare_json, py::arg("a"), py::arg("b"));
  m.def(
      "price_cache", [](bool on) { g_price_cache = on; }, py::arg("on"));
#ifdef SOUFFLE_BUILD_RUNNER
  m.attr("build_runner") = SOUFFLE_BUILD_RUNNER;
#else
  m.attr("build_runner") = "";
#endif
  m.def("strategies", [] {
    std::vector<std::string> out;
    for (plan::Strategy s : plan::all_strategies()) out.push_back(plan::strategy_name(s));
    return out;
  });
}
