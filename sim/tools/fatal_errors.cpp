// A std::terminate handler fed by a tee on std::cerr. Everything it touches is reached through
// the two statics below: a terminate handler has no other way in.
#include "sim/tools/fatal_errors.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <streambuf>

#include "sim/core/error_text.h"

namespace testbed {
namespace {

// Passes everything through to the real stderr and keeps the last few kB.
class TailBuffer : public std::streambuf {
 public:
  explicit TailBuffer(std::streambuf* out) : out_(out) {}
  std::streambuf* out() const { return out_; }
  const std::string& tail() const { return tail_; }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    keep(std::string(1, static_cast<char>(c)));
    return out_->sputc(static_cast<char>(c));
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    keep(std::string(s, static_cast<size_t>(n)));
    return out_->sputn(s, n);
  }
  int sync() override { return out_->pubsync(); }

 private:
  void keep(const std::string& text) {
    tail_ += text;
    if (tail_.size() > 8192) tail_.erase(0, tail_.size() - 4096);
  }
  std::streambuf* out_;
  std::string tail_;
};

TailBuffer* g_tail = nullptr;
std::function<void(const std::string&)>* g_record = nullptr;

// The quoted value after `key="` in `line`, or "".
std::string quoted(const std::string& line, const std::string& key) {
  const size_t at = line.find(key + "=\"");
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size() + 2;
  const size_t end = line.find('"', begin);
  return line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::string after(const std::string& line, const std::string& key) {
  const size_t at = line.find(key + "=");
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size() + 1;
  return line.substr(begin, line.find_first_of(", \n", begin) - begin);
}

[[noreturn]] void on_terminate() {
  std::string sentence;
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      sentence = error_sentence(x);
    } catch (...) {
      sentence = "an exception of unknown type ended the run";
    }
  } else {
    sentence = ns3_fatal_sentence(g_tail ? g_tail->tail() : "");
  }
  if (g_tail) std::cerr.rdbuf(g_tail->out());
  std::cerr << "testbed: error: " << sentence << std::endl;
  if (g_record && *g_record) {
    try {
      (*g_record)(sentence);
    } catch (const std::exception& x) {
      std::cerr << "testbed: error: the output file could not record it: " << x.what() << std::endl;
    }
  }
  std::fflush(stdout);
  std::_Exit(1);
}

}  // namespace

void catch_fatal_errors() {
  static TailBuffer tail(std::cerr.rdbuf());
  static std::function<void(const std::string&)> record;
  g_tail = &tail;
  g_record = &record;
  std::cerr.rdbuf(&tail);
  std::set_terminate(on_terminate);
}

void on_fatal_error(std::function<void(const std::string&)> record) {
  if (g_record) *g_record = std::move(record);
}

std::string ns3_fatal_sentence(const std::string& printed) {
  // The last line that names a source line is ns-3's report.
  std::string line;
  size_t end = printed.size();
  while (end > 0) {
    const size_t begin = printed.rfind('\n', end - 1);
    const size_t from = begin == std::string::npos ? 0 : begin + 1;
    std::string candidate = printed.substr(from, end - from);
    if (candidate.find("file=") != std::string::npos && candidate.find("line=") != std::string::npos) {
      line = candidate;
      break;
    }
    if (begin == std::string::npos) break;
    end = begin;
  }
  if (line.empty()) return "ns-3 stopped the run (it printed no message)";
  std::string file = after(line, "file");
  file = file.substr(file.find_last_of('/') + 1);
  const std::string where = " (" + file + ":" + after(line, "line") + ")";
  const std::string msg = quoted(line, "msg"), cond = quoted(line, "cond");
  if (!cond.empty())
    return "ns-3 stopped the run: assertion " + cond + " failed" + (msg.empty() ? "" : ": " + msg) + where;
  return "ns-3 stopped the run: " + (msg.empty() ? std::string("a fatal error") : msg) + where;
}

}  // namespace testbed
