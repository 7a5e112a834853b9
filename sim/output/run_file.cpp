// HDF5 reading for sweeps and reports; tolerant, since a file may be from a killed run.
#include "sim/output/run_file.h"

#include <H5Cpp.h>

#include <filesystem>
#include <vector>

namespace testbed {
namespace {

double number_attr(const H5::H5Object& object, const char* name) {
  if (!object.attrExists(name)) return NAN;
  H5::Attribute a = object.openAttribute(name);
  double value = NAN;
  a.read(H5::PredType::NATIVE_DOUBLE, &value);  // HDF5 converts the integer attributes
  return value;
}

std::string string_attr(const H5::H5Object& object, const char* name) {
  if (!object.attrExists(name)) return "";
  H5::Attribute a = object.openAttribute(name);
  std::string value;
  a.read(a.getStrType(), value);
  return value;
}

double compute_time(const H5::H5File& file) {
  if (!file.nameExists("/train") || !file.nameExists("/train/compute_time")) return NAN;
  H5::DataSet set = file.openDataSet("/train/compute_time");
  H5::DataSpace space = set.getSpace();
  if (space.getSimpleExtentNdims() != 2) return NAN;
  hsize_t dims[2];
  space.getSimpleExtentDims(dims);
  std::vector<double> values(dims[0] * dims[1]);
  if (values.empty()) return 0;
  set.read(values.data(), H5::PredType::NATIVE_DOUBLE);
  double total = 0;
  for (hsize_t s = 0; s < dims[0]; ++s) {
    double sum = 0;
    for (hsize_t n = 0; n < dims[1]; ++n) sum += values[s * dims[1] + n];
    total += sum / static_cast<double>(dims[1]);
  }
  return total;
}

double last_step(const H5::H5File& file) {
  if (!file.nameExists("/train") || !file.nameExists("/train/step")) return NAN;
  H5::DataSet set = file.openDataSet("/train/step");
  H5::DataSpace space = set.getSpace();
  hsize_t rows = 0;
  if (space.getSimpleExtentNdims() != 1) return NAN;
  space.getSimpleExtentDims(&rows);
  if (rows == 0) return NAN;
  // Only the last row: a long run's column is megabytes.
  hsize_t last = rows - 1, one = 1;
  space.selectHyperslab(H5S_SELECT_SET, &one, &last);
  H5::DataSpace memory(1, &one);
  int64_t step = 0;
  set.read(&step, H5::PredType::NATIVE_INT64, memory, space);
  return static_cast<double>(step);
}

// A 1-D float column; empty when the file has none.
std::vector<double> column(const H5::H5File& file, const char* path) {
  if (!file.nameExists(path)) return {};
  H5::DataSet set = file.openDataSet(path);
  H5::DataSpace space = set.getSpace();
  if (space.getSimpleExtentNdims() != 1) return {};
  hsize_t rows = 0;
  space.getSimpleExtentDims(&rows);
  std::vector<double> values(rows);
  if (rows > 0) set.read(values.data(), H5::PredType::NATIVE_DOUBLE);
  return values;
}

std::vector<std::pair<std::string, std::string>> string_attrs(const H5::H5File& file, const char* group) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!file.nameExists(group)) return out;
  H5::Group g = file.openGroup(group);
  for (int i = 0; i < g.getNumAttrs(); ++i) {
    H5::Attribute a = g.openAttribute(static_cast<unsigned>(i));
    std::string value;
    if (a.getTypeClass() == H5T_STRING) a.read(a.getStrType(), value);
    out.emplace_back(a.getName(), value);
  }
  return out;
}

}  // namespace

std::optional<RunFile> read_run_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  H5::Exception::dontPrint();  // a torn file is an expected case here, not a report to print
  try {
    // No lock: a reader's lock would make a run starting at that moment fail to create its
    // file (a sweep reads its runs' files while other runs, or other shards, write theirs).
    H5::FileAccPropList access;
    H5Pset_file_locking(access.getId(), false, true);
    H5::H5File file(path, H5F_ACC_RDONLY, H5::FileCreatPropList::DEFAULT, access);
    RunFile r;
    r.status = string_attr(file, "status");
    r.scenario = string_attr(file, "scenario");
    r.error = string_attr(file, "error");
    r.projection = number_attr(file, "projection") == 1;
    if (file.nameExists("/summary")) {
      H5::Group g = file.openGroup("/summary");
      r.projected_time_s = number_attr(g, "projected_time_s");
      r.total_bytes = number_attr(g, "total_bytes");
      r.final_eval_loss = number_attr(g, "final_eval_loss");
      r.final_accuracy = number_attr(g, "final_accuracy");
      r.final_perplexity = number_attr(g, "final_perplexity");
      r.host_time_s = number_attr(g, "host_time_s");
      r.steps_completed = number_attr(g, "steps_completed");
    }
    r.compute_time_s = compute_time(file);
    r.last_step = last_step(file);
    if (file.nameExists("/rounds")) {
      r.round_accuracy = column(file, "/rounds/accuracy");
      r.round_eval_loss = column(file, "/rounds/eval_loss");
    }
    r.numerics = string_attrs(file, "/numerics");
    return r;
  } catch (const H5::Exception&) {
    return std::nullopt;
  }
}

}  // namespace testbed
