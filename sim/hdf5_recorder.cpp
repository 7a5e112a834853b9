// HDF5 output: extendible chunked datasets, one row appended per step or eval.
#include "sim/hdf5_recorder.h"

#include <H5Cpp.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace testbed {
namespace {

const char* const kVersion = "0.1.0";

// An extendible 1-D (cols == 0) or 2-D dataset that grows by whole rows.
class Appendable {
 public:
  Appendable(H5::Group& group, const std::string& name, const H5::DataType& type, hsize_t cols)
      : type_(type), cols_(cols) {
    int rank = cols ? 2 : 1;
    hsize_t dims[2] = {0, cols}, max[2] = {H5S_UNLIMITED, cols};
    hsize_t chunk[2] = {cols ? std::max<hsize_t>(1, 4096 / cols) : 4096, std::max<hsize_t>(cols, 1)};
    H5::DSetCreatPropList props;
    props.setChunk(rank, chunk);
    dataset_ = group.createDataSet(name, type, H5::DataSpace(rank, dims, max), props);
  }

  void append(const void* data, hsize_t rows = 1) {
    if (rows == 0) return;
    int rank = cols_ ? 2 : 1;
    hsize_t size[2] = {rows_ + rows, cols_};
    dataset_.extend(size);
    H5::DataSpace file_space = dataset_.getSpace();
    hsize_t start[2] = {rows_, 0}, count[2] = {rows, cols_};
    file_space.selectHyperslab(H5S_SELECT_SET, count, start);
    H5::DataSpace memory(rank, count);
    dataset_.write(data, type_, memory, file_space);
    rows_ += rows;
  }

 private:
  H5::DataSet dataset_;
  H5::DataType type_;
  hsize_t cols_;
  hsize_t rows_ = 0;
};

constexpr size_t kKindChars = 16;

struct MessageRow {
  int32_t src, dst;
  uint64_t bytes;
  double t_send, t_recv;
  uint64_t lost_bytes;
  char kind[kKindChars];
};

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

}  // namespace

struct Hdf5Recorder::Impl {
  std::string path;
  H5::H5File file;
  H5::Group train, comm, eval, replicas, summary;
  int nodes;
  Appendable train_step, train_loss, train_time, train_compute, comm_bytes;
  Appendable eval_step, eval_loss, eval_accuracy, eval_replica_loss;
  Appendable correlation, min_correlation, distance;
  Appendable messages;
  std::vector<MessageRow> pending_messages;

  Impl(const std::string& p, int n)
      : path(p),
        file(p, H5F_ACC_TRUNC),
        train(file.createGroup("/train")),
        comm(file.createGroup("/comm")),
        eval(file.createGroup("/eval")),
        replicas(file.createGroup("/replicas")),
        summary(file.createGroup("/summary")),
        nodes(n),
        train_step(train, "step", H5::PredType::NATIVE_INT64, 0),
        train_loss(train, "loss", H5::PredType::NATIVE_DOUBLE, n),
        train_time(train, "time", H5::PredType::NATIVE_DOUBLE, n),
        train_compute(train, "compute_time", H5::PredType::NATIVE_DOUBLE, n),
        comm_bytes(comm, "bytes", H5::PredType::NATIVE_UINT64, n),
        eval_step(eval, "step", H5::PredType::NATIVE_INT64, 0),
        eval_loss(eval, "loss", H5::PredType::NATIVE_DOUBLE, 0),
        eval_accuracy(eval, "accuracy", H5::PredType::NATIVE_DOUBLE, 0),
        eval_replica_loss(eval, "replica_loss", H5::PredType::NATIVE_DOUBLE, n),
        correlation(replicas, "correlation", H5::PredType::NATIVE_DOUBLE, 0),
        min_correlation(replicas, "min_correlation", H5::PredType::NATIVE_DOUBLE, 0),
        distance(replicas, "distance", H5::PredType::NATIVE_DOUBLE, 0),
        messages(comm, "messages", message_type(), 0) {}

  void append_train(const TrainRow& row);
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

Hdf5Recorder::Hdf5Recorder(const std::string& path, const RunInfo& info) {
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  H5::Exception::dontPrint();
  guarded(path, "create the file", [&] {
    impl_ = std::make_unique<Impl>(path, info.nodes);
    set_attribute(impl_->file, "scenario", info.scenario_yaml);
    set_attribute(impl_->file, "testbed_version", std::string(kVersion));
    set_attribute(impl_->file, "status", std::string("running"));
    set_attribute(impl_->file, "device", info.device);
    set_attribute(impl_->file, "nodes", int64_t(info.nodes), H5::PredType::NATIVE_INT64);
    impl_->flush();
  });
}

Hdf5Recorder::~Hdf5Recorder() = default;

void Hdf5Recorder::train(const TrainRow& row) {
  guarded(impl_->path, "append a training row", [&] { impl_->append_train(row); });
}

void Hdf5Recorder::Impl::append_train(const TrainRow& row) {
  int64_t step = row.step;
  train_step.append(&step);
  train_loss.append(row.loss.data());
  train_time.append(row.time.data());
  train_compute.append(row.compute_time.data());
  comm_bytes.append(row.bytes.data());
}

void Hdf5Recorder::eval(const EvalRow& row) {
  guarded(impl_->path, "append an eval row", [&] { impl_->append_eval(row); });
}

void Hdf5Recorder::Impl::append_eval(const EvalRow& row) {
  int64_t step = row.step;
  eval_step.append(&step);
  eval_loss.append(&row.loss);
  eval_accuracy.append(&row.accuracy);
  eval_replica_loss.append(row.replica_loss.data());
  correlation.append(&row.correlation);
  min_correlation.append(&row.min_correlation);
  distance.append(&row.distance);
  flush();
}

void Hdf5Recorder::message(const MessageRecord& r) {
  MessageRow row{r.src, r.dst, r.bytes, r.t_send, r.t_recv, r.lost_bytes, {}};
  std::strncpy(row.kind, r.kind.c_str(), kKindChars - 1);
  impl_->pending_messages.push_back(row);
}

void Hdf5Recorder::finish(const RunSummary& s) {
  guarded(impl_->path, "write the summary", [&] { impl_->write_summary(s); });
}

void Hdf5Recorder::Impl::write_summary(const RunSummary& s) {
  auto& g = summary;
  set_attribute(g, "projected_time_s", s.projected_time_s, H5::PredType::NATIVE_DOUBLE);
  set_attribute(g, "total_bytes", s.total_bytes, H5::PredType::NATIVE_UINT64);
  set_attribute(g, "final_eval_loss", s.final_eval_loss, H5::PredType::NATIVE_DOUBLE);
  set_attribute(g, "final_accuracy", s.final_accuracy, H5::PredType::NATIVE_DOUBLE);
  set_attribute(g, "host_time_s", s.host_time_s, H5::PredType::NATIVE_DOUBLE);
  set_attribute(g, "model_parameters", s.model_parameters, H5::PredType::NATIVE_INT64);
  set_attribute(g, "steps_completed", int64_t(s.steps_completed), H5::PredType::NATIVE_INT64);
  set_attribute(file, "status", s.status);
  if (!s.error.empty()) set_attribute(file, "error", s.error);
  flush();
}

}  // namespace testbed
