// HDF5 output: extendible chunked datasets, one row appended per step or eval.
#include "sim/output/hdf5_recorder.h"
#include "sim/output/hdf5_messages.h"

#include <H5Cpp.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <vector>

namespace testbed {
namespace {

const char* const kVersion = "0.1.0";

// Correlation matrices beyond this many nodes would dominate the file; only their mean
// and minimum are kept then.
constexpr int kMaxMatrixNodes = 256;

// An extendible dataset that grows by whole rows of shape `row` (empty: scalars).
class Appendable {
 public:
  Appendable() = default;
  Appendable(H5::Group& group, const std::string& name, const H5::DataType& type, std::vector<hsize_t> row)
      : type_(type), row_(std::move(row)) {
    hsize_t row_size = 1;
    for (auto d : row_) row_size *= d;
    std::vector<hsize_t> dims{0}, max{H5S_UNLIMITED}, chunk{std::max<hsize_t>(1, 4096 / row_size)};
    dims.insert(dims.end(), row_.begin(), row_.end());
    max.insert(max.end(), row_.begin(), row_.end());
    chunk.insert(chunk.end(), row_.begin(), row_.end());
    H5::DSetCreatPropList props;
    props.setChunk(static_cast<int>(chunk.size()), chunk.data());
    dataset_ =
        group.createDataSet(name, type, H5::DataSpace(static_cast<int>(dims.size()), dims.data(), max.data()), props);
  }
  // The existing dataset `name`, cut back to its first `keep` rows (a resumed run).
  Appendable(H5::Group& group, const std::string& name, const H5::DataType& type, std::vector<hsize_t> row,
             hsize_t keep)
      : dataset_(group.openDataSet(name)), type_(type), row_(std::move(row)), rows_(keep) {
    std::vector<hsize_t> size(row_.size() + 1);
    dataset_.getSpace().getSimpleExtentDims(size.data());
    if (size[0] < keep)
      throw std::runtime_error("dataset " + name + " holds " + std::to_string(size[0]) + " rows, fewer than the " +
                               std::to_string(keep) + " the checkpoint saw");
    size[0] = keep;
    dataset_.extend(size.data());
  }

  hsize_t rows() const { return rows_; }

  void append(const void* data, hsize_t rows = 1) {
    if (rows == 0) return;
    std::vector<hsize_t> size{rows_ + rows}, start{rows_}, count{rows};
    size.insert(size.end(), row_.begin(), row_.end());
    start.insert(start.end(), row_.size(), 0);
    count.insert(count.end(), row_.begin(), row_.end());
    dataset_.extend(size.data());
    H5::DataSpace file_space = dataset_.getSpace();
    file_space.selectHyperslab(H5S_SELECT_SET, count.data(), start.data());
    H5::DataSpace memory(static_cast<int>(count.size()), count.data());
    dataset_.write(data, type_, memory, file_space);
    rows_ += rows;
  }

 private:
  H5::DataSet dataset_;
  H5::DataType type_;
  std::vector<hsize_t> row_;
  hsize_t rows_ = 0;
};

constexpr size_t kMessageBatch = 1 << 16;  // rows (5 MB) kept before they are written

template <class T>
void set_attribute(H5::H5Object& object, const std::string& name, const T& value, const H5::PredType& type) {
  if (object.attrExists(name)) object.removeAttr(name);
  object.createAttribute(name, type, H5::DataSpace(H5S_SCALAR)).write(type, &value);
}

void set_attribute(H5::H5Object& object, const std::string& name, const std::string& value) {
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  if (object.attrExists(name)) object.removeAttr(name);
  const char* text = value.c_str();
  object.createAttribute(name, type, H5::DataSpace(H5S_SCALAR)).write(type, &text);
}

// HDF5's C++ exceptions are not std::exceptions; give callers one they can catch.
template <class Body>
void guarded(const std::string& path, const char* what, Body body) {
  try {
    body();
  } catch (const H5::Exception& e) {
    throw std::runtime_error("HDF5 output " + path + ": cannot " + what + " (" + e.getDetailMsg() + ")");
  }
}

// Functions, not namespace-scope references: HDF5's type constants are themselves
// initialised at library start-up.
const H5::PredType& f64() { return H5::PredType::NATIVE_DOUBLE; }
const H5::PredType& i64() { return H5::PredType::NATIVE_INT64; }

}  // namespace

H5::CompType message_type() {
  H5::CompType type(sizeof(MessageRow));
  type.insertMember("src", HOFFSET(MessageRow, src), H5::PredType::NATIVE_INT32);
  type.insertMember("dst", HOFFSET(MessageRow, dst), H5::PredType::NATIVE_INT32);
  type.insertMember("bytes", HOFFSET(MessageRow, bytes), H5::PredType::NATIVE_UINT64);
  type.insertMember("t_send", HOFFSET(MessageRow, t_send), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("t_recv", HOFFSET(MessageRow, t_recv), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("lost_bytes", HOFFSET(MessageRow, lost_bytes), H5::PredType::NATIVE_UINT64);
  type.insertMember("kind", HOFFSET(MessageRow, kind), H5::StrType(H5::PredType::C_S1, kKindChars));
  return type;
}

struct Hdf5Recorder::Impl {
  std::string path;
  H5::H5File file;
  H5::Group train, comm, eval, replicas, summary, nodes_group;
  hsize_t nodes;
  bool projection;  // no loss, no evaluation: those datasets are left out
  Appendable train_step, train_loss, train_time, train_compute, comm_bytes;
  Appendable eval_step, eval_loss, eval_accuracy, eval_perplexity, eval_replica_loss, eval_replica_accuracy;
  std::map<std::string, std::pair<Appendable, Appendable>> variants;  // loss, accuracy
  Appendable correlation, min_correlation, distance, correlation_matrix;
  Appendable messages;
  // Federated runs: a row per picked client and round.
  Appendable part_round, part_client, part_samples, part_steps, part_device, part_loss, part_download, part_start,
      part_compute, part_upload, part_dropped;
  Appendable round_round, round_start, round_end, round_applied, round_dropped, round_utilisation, round_train_loss,
      round_eval_loss, round_accuracy;
  std::vector<MessageRow> pending_messages;
  uint64_t lost_bytes = 0;  // over every message, for /summary

  // A new file (`keep` null), or the existing one cut back to the rows `keep` counts. One list
  // of datasets serves both, so a resumed file has exactly the layout of a fresh one.
  Impl(const std::string& p, H5::H5File f, const RunInfo& info, const RecorderMark* keep)
      : path(p),
        file(std::move(f)),
        train(group(file, "/train", keep)),
        comm(group(file, "/comm", keep)),
        eval(group(file, "/eval", keep)),
        replicas(group(file, "/replicas", keep)),
        summary(group(file, "/summary", keep)),
        nodes_group(group(file, "/nodes", keep)),
        nodes(info.nodes),
        projection(info.projection) {
    auto column = [&](H5::Group& g, const std::string& name, const H5::DataType& type, std::vector<hsize_t> row,
                      int64_t rows) {
      return keep ? Appendable(g, name, type, std::move(row), static_cast<hsize_t>(rows))
                  : Appendable(g, name, type, std::move(row));
    };
    const int64_t t = keep ? keep->train_rows : 0, e = keep ? keep->eval_rows : 0;
    train_step = column(train, "step", i64(), {}, t);
    if (!projection) train_loss = column(train, "loss", f64(), {nodes}, t);
    train_time = column(train, "time", f64(), {nodes}, t);
    train_compute = column(train, "compute_time", f64(), {nodes}, t);
    comm_bytes = column(comm, "bytes", H5::PredType::NATIVE_UINT64, {nodes}, t);
    messages = column(comm, "messages", message_type(), {}, keep ? keep->messages : 0);
    if (!projection) {  // a projection has no loss and no evaluation
      eval_step = column(eval, "step", i64(), {}, e);
      eval_loss = column(eval, "loss", f64(), {}, e);
      eval_accuracy = column(eval, "accuracy", f64(), {}, e);
      eval_perplexity = column(eval, "perplexity", f64(), {}, e);
      eval_replica_loss = column(eval, "replica_loss", f64(), {nodes}, e);
      eval_replica_accuracy = column(eval, "replica_accuracy", f64(), {nodes}, e);
      correlation = column(replicas, "correlation", f64(), {}, e);
      min_correlation = column(replicas, "min_correlation", f64(), {}, e);
      distance = column(replicas, "distance", f64(), {}, e);
      if (info.nodes <= kMaxMatrixNodes) {
        correlation_matrix = column(replicas, "correlation_matrix", f64(), {nodes, nodes}, e);
      }
      if (!info.test_variants.empty()) {
        H5::Group all = keep ? eval.openGroup("variants") : eval.createGroup("variants");
        for (const auto& name : info.test_variants) {
          H5::Group g = keep ? all.openGroup(name) : all.createGroup(name);
          variants[name] = {column(g, "loss", f64(), {}, e), column(g, "accuracy", f64(), {}, e)};
        }
      }
    }
    if (info.federated) {
      H5::Group g = keep ? file.openGroup("/participation") : file.createGroup("/participation");
      const int64_t p = 0;  // federated runs are not resumed
      part_round = column(g, "round", i64(), {}, p);
      part_client = column(g, "client", i64(), {}, p);
      part_samples = column(g, "samples", i64(), {}, p);
      part_steps = column(g, "steps", i64(), {}, p);
      part_device = column(g, "device", i64(), {}, p);
      part_loss = column(g, "loss", f64(), {}, p);
      part_download = column(g, "t_download", f64(), {}, p);
      part_start = column(g, "t_start", f64(), {}, p);
      part_compute = column(g, "t_compute", f64(), {}, p);
      part_upload = column(g, "t_upload", f64(), {}, p);
      part_dropped = column(g, "dropped", i64(), {}, p);
      H5::Group r = keep ? file.openGroup("/rounds") : file.createGroup("/rounds");
      round_round = column(r, "round", i64(), {}, p);
      round_start = column(r, "t_start", f64(), {}, p);
      round_end = column(r, "t_end", f64(), {}, p);
      round_applied = column(r, "applied", i64(), {}, p);
      round_dropped = column(r, "dropped", i64(), {}, p);
      round_utilisation = column(r, "utilisation", f64(), {}, p);
      round_train_loss = column(r, "train_loss", f64(), {}, p);
      round_eval_loss = column(r, "eval_loss", f64(), {}, p);
      round_accuracy = column(r, "accuracy", f64(), {}, p);
    }
    if (keep) {
      lost_bytes = keep->lost_bytes;
    } else if (!info.node_speeds.empty()) {
      hsize_t n = info.node_speeds.size();
      nodes_group.createDataSet("speed", f64(), H5::DataSpace(1, &n)).write(info.node_speeds.data(), f64());
    }
  }

  static H5::Group group(H5::H5File& file, const char* name, const RecorderMark* keep) {
    return keep ? file.openGroup(name) : file.createGroup(name);
  }
  void append_train(const TrainRow& row);
  void append_participation(const ParticipationRow& row) {
    const int64_t round = row.round, client = row.client, dropped = row.dropped, steps = row.steps, device = row.device;
    part_round.append(&round);
    part_client.append(&client);
    part_samples.append(&row.samples);
    part_steps.append(&steps);
    part_device.append(&device);
    part_loss.append(&row.loss);
    part_download.append(&row.t_download);
    part_start.append(&row.t_start);
    part_compute.append(&row.t_compute);
    part_upload.append(&row.t_upload);
    part_dropped.append(&dropped);
  }
  void append_round(const RoundRow& row) {
    const int64_t round = row.round, applied = row.applied, dropped = row.dropped;
    round_round.append(&round);
    round_start.append(&row.t_start);
    round_end.append(&row.t_end);
    round_applied.append(&applied);
    round_dropped.append(&dropped);
    round_utilisation.append(&row.utilisation);
    round_train_loss.append(&row.train_loss);
    round_eval_loss.append(&row.eval_loss);
    round_accuracy.append(&row.accuracy);
  }
  void append_eval(const EvalRow& row);
  void write_summary(const RunSummary& summary);
  void write_messages() {
    messages.append(pending_messages.data(), pending_messages.size());
    pending_messages.clear();
  }
  void flush() {
    write_messages();
    file.flush(H5F_SCOPE_GLOBAL);
  }
};

// The file is made under a temporary name and renamed once its groups and attributes are on
// disk (the first flush), so the output path never names a file HDF5 cannot open: a run killed
// in between leaves `PATH.part` and any earlier file at PATH untouched.
Hdf5Recorder::Hdf5Recorder(const std::string& path, const RunInfo& info) {
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  H5::Exception::dontPrint();
  guarded(path, "create the file", [&] {
    impl_ = std::make_unique<Impl>(path, H5::H5File(path + ".part", H5F_ACC_TRUNC), info, nullptr);
    set_attribute(impl_->file, "scenario", info.scenario_yaml);
    set_attribute(impl_->file, "testbed_version", std::string(kVersion));
    set_attribute(impl_->file, "status", std::string(status_name(RunStatus::Running)));
    set_attribute(impl_->file, "device", info.device);
    set_attribute(impl_->file, "nodes", int64_t(info.nodes), i64());
    set_attribute(impl_->file, "deterministic", int64_t(info.deterministic), i64());
    set_attribute(impl_->file, "projection", int64_t(info.projection), i64());
    set_attribute(impl_->comm, "messages_one_row_above", int64_t(kMessageRowsPerCollective), i64());
    H5::Group numerics = impl_->file.createGroup("/numerics");
    for (const auto& [name, value] : info.numerics) set_attribute(numerics, name, value);
    unsigned major = 0, minor = 0, release = 0;
    H5get_libversion(&major, &minor, &release);
    set_attribute(numerics, "hdf5_version",
                  std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release));
    set_attribute(impl_->summary, "model_parameters", info.model_parameters, i64());
    set_attribute(impl_->summary, "trainable_parameters", info.trainable_parameters, i64());
    impl_->flush();
  });
  std::error_code ec;
  std::filesystem::rename(path + ".part", path, ec);  // the open handle follows the file
  if (ec) throw std::runtime_error("HDF5 output " + path + ": cannot create the file (" + ec.message() + ")");
}

Hdf5Recorder::Hdf5Recorder(const std::string& path, const RunInfo& info, const RecorderMark& keep) {
  H5::Exception::dontPrint();
  if (!std::filesystem::exists(path))
    throw std::runtime_error("HDF5 output " + path + ": the file to resume is missing");
  guarded(path, "reopen the file to resume it", [&] {
    impl_ = std::make_unique<Impl>(path, H5::H5File(path, H5F_ACC_RDWR), info, &keep);
    set_attribute(impl_->file, "status", std::string(status_name(RunStatus::Running)));
    if (impl_->file.attrExists("error")) impl_->file.removeAttr("error");
    impl_->flush();
  });
}

Hdf5Recorder::~Hdf5Recorder() = default;

RecorderMark Hdf5Recorder::mark() {
  guarded(impl_->path, "flush", [&] { impl_->flush(); });
  return {static_cast<int64_t>(impl_->train_step.rows()), static_cast<int64_t>(impl_->eval_step.rows()),
          static_cast<int64_t>(impl_->messages.rows()), impl_->lost_bytes};
}

void Hdf5Recorder::train(const TrainRow& row) {
  guarded(impl_->path, "append a training row", [&] { impl_->append_train(row); });
}

void Hdf5Recorder::Impl::append_train(const TrainRow& row) {
  int64_t step = row.step;
  train_step.append(&step);
  if (!projection) train_loss.append(row.loss.data());
  train_time.append(row.time.data());
  train_compute.append(row.compute_time.data());
  comm_bytes.append(row.bytes.data());
}

void Hdf5Recorder::participation(const ParticipationRow& row) {
  guarded(impl_->path, "append a participation row", [&] { impl_->append_participation(row); });
}

void Hdf5Recorder::round(const RoundRow& row) {
  guarded(impl_->path, "append a round row", [&] { impl_->append_round(row); });
}

void Hdf5Recorder::eval(const EvalRow& row) {
  guarded(impl_->path, "append an eval row", [&] { impl_->append_eval(row); });
}

void Hdf5Recorder::Impl::append_eval(const EvalRow& row) {
  int64_t step = row.step;
  eval_step.append(&step);
  eval_loss.append(&row.loss);
  eval_accuracy.append(&row.accuracy);
  eval_perplexity.append(&row.perplexity);
  eval_replica_loss.append(row.replica_loss.data());
  eval_replica_accuracy.append(row.replica_accuracy.data());
  for (const auto& v : row.variants) {
    auto& [loss, accuracy] = variants.at(v.name);
    loss.append(&v.loss);
    accuracy.append(&v.accuracy);
  }
  correlation.append(&row.correlation);
  min_correlation.append(&row.min_correlation);
  distance.append(&row.distance);
  if (nodes <= kMaxMatrixNodes) correlation_matrix.append(row.correlation_matrix.data());
  flush();
}

void Hdf5Recorder::message(const MessageRecord& r) {
  MessageRow row{r.src, r.dst, r.bytes, r.t_send, r.t_recv, r.lost_bytes, {}};
  if (r.kind.size() >= kKindChars)
    throw std::logic_error("message kind '" + r.kind + "' is longer than " + std::to_string(kKindChars - 1) +
                           " characters, the HDF5 column's width");
  std::strncpy(row.kind, r.kind.c_str(), kKindChars - 1);
  impl_->pending_messages.push_back(row);
  impl_->lost_bytes += r.lost_bytes;
  // Written in bounded batches: a ring all-reduce sends 2N(N-1) messages a step, so
  // holding them until the next eval would grow with N^2 x eval_every (GBs at N=256).
  if (impl_->pending_messages.size() >= kMessageBatch) {
    guarded(impl_->path, "write messages", [&] { impl_->write_messages(); });
  }
}

void Hdf5Recorder::finish(const RunSummary& s) {
  guarded(impl_->path, "write the summary", [&] { impl_->write_summary(s); });
}

void Hdf5Recorder::fail(const std::string& error) {
  guarded(impl_->path, "record the failure", [&] {
    set_attribute(impl_->file, "status", std::string(status_name(RunStatus::Failed)));
    set_attribute(impl_->file, "error", error);
    impl_->flush();
  });
}

void Hdf5Recorder::Impl::write_summary(const RunSummary& s) {
  auto& g = summary;
  set_attribute(g, "projected_time_s", s.projected_time_s, f64());
  set_attribute(g, "total_bytes", s.total_bytes, H5::PredType::NATIVE_UINT64);
  set_attribute(g, "lost_bytes", lost_bytes, H5::PredType::NATIVE_UINT64);
  if (!projection) {
    set_attribute(g, "final_eval_loss", s.final_eval_loss, f64());
    set_attribute(g, "final_accuracy", s.final_accuracy, f64());
    set_attribute(g, "final_perplexity", s.final_perplexity, f64());
    set_attribute(g, "eval_samples", s.eval_samples, i64());
    set_attribute(g, "final_eval_samples", s.final_eval_samples, i64());
  }
  set_attribute(g, "host_time_s", s.host_time_s, f64());
  set_attribute(g, "model_parameters", s.model_parameters, i64());
  set_attribute(g, "steps_completed", int64_t(s.steps_completed), i64());
  set_attribute(g, "phases_replayed", s.phases_replayed, i64());
  set_attribute(g, "phases_simulated", s.phases_simulated, i64());
  set_attribute(file, "status", std::string(status_name(s.status)));
  if (!s.error.empty()) set_attribute(file, "error", s.error);
  flush();
}

}  // namespace testbed
