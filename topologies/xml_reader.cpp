// A small strict XML reader: enough for GraphML, written here to keep line numbers for errors.
#include "topologies/xml_reader.h"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace testbed {

namespace {

class Parser {
 public:
  Parser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  std::unique_ptr<XmlElement> document() {
    std::unique_ptr<XmlElement> root;
    std::vector<XmlElement*> open;
    while (pos_ < s_.size()) {
      if (s_[pos_] != '<') {
        std::string text = character_data();
        if (!open.empty())
          open.back()->text += text;
        else if (text.find_first_not_of(" \t\r\n") != std::string::npos)
          fail("text outside the root element");
        continue;
      }
      if (starts("<?")) {
        skip_past("?>");
        continue;
      }
      if (starts("<!--")) {
        skip_past("-->");
        continue;
      }
      if (starts("<!")) {
        skip_past(">");
        continue;
      }
      if (starts("</")) {
        pos_ += 2;
        std::string name = read_name();
        skip_space();
        expect('>');
        if (open.empty() || open.back()->name != name)
          fail("closing tag </" + name + "> does not match " +
               (open.empty() ? std::string("any open element") : "<" + open.back()->name + ">"));
        open.pop_back();
        continue;
      }
      auto element = std::make_unique<XmlElement>();
      element->line = line_;
      ++pos_;
      element->name = read_name();
      bool empty = false;
      for (;;) {
        skip_space();
        if (starts("/>")) {
          pos_ += 2;
          empty = true;
          break;
        }
        if (starts(">")) {
          ++pos_;
          break;
        }
        std::string key = read_name();
        skip_space();
        expect('=');
        skip_space();
        if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) fail("expected a quoted attribute value");
        const char quote = s_[pos_++];
        const size_t end = s_.find(quote, pos_);
        if (end == std::string::npos) fail("unterminated attribute value");
        std::string raw = s_.substr(pos_, end - pos_);
        advance_to(end + 1);
        if (!element->attributes.emplace(key, decode(raw)).second) fail("duplicate attribute '" + key + "'");
      }
      XmlElement* raw = element.get();
      if (open.empty()) {
        if (root) fail("a second root element <" + raw->name + ">");
        root = std::move(element);
      } else {
        open.back()->children.push_back(std::move(element));
      }
      if (!empty) open.push_back(raw);
    }
    if (!open.empty()) fail("element <" + open.back()->name + "> is not closed");
    if (!root) fail("no root element");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw std::invalid_argument(name_ + ":" + std::to_string(line_) + ": " + message);
  }
  bool starts(const char* prefix) const {
    return s_.compare(pos_, std::char_traits<char>::length(prefix), prefix) == 0;
  }
  // Moves to `end`, counting newlines so that errors carry the line.
  void advance_to(size_t end) {
    for (; pos_ < end && pos_ < s_.size(); ++pos_) line_ += s_[pos_] == '\n';
  }
  void skip_past(const char* marker) {
    const size_t end = s_.find(marker, pos_);
    if (end == std::string::npos) fail(std::string("missing '") + marker + "'");
    advance_to(end + std::char_traits<char>::length(marker));
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) advance_to(pos_ + 1);
  }
  void expect(char c) {
    if (pos_ >= s_.size() || s_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string read_name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                s_[pos_] == ':' || s_[pos_] == '-' || s_[pos_] == '.'))
      ++pos_;
    if (pos_ == start) fail("expected a name");
    return s_.substr(start, pos_ - start);
  }
  std::string character_data() {
    size_t end = s_.find('<', pos_);
    if (end == std::string::npos) end = s_.size();
    std::string raw = s_.substr(pos_, end - pos_);
    advance_to(end);
    return decode(raw);
  }
  std::string decode(const std::string& raw) const {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '&') {
        out += raw[i];
        continue;
      }
      const size_t semi = raw.find(';', i);
      if (semi == std::string::npos) fail("'&' without ';'");
      const std::string entity = raw.substr(i + 1, semi - i - 1);
      if (entity == "lt")
        out += '<';
      else if (entity == "gt")
        out += '>';
      else if (entity == "amp")
        out += '&';
      else if (entity == "quot")
        out += '"';
      else if (entity == "apos")
        out += '\'';
      else if (entity.size() > 1 && entity[0] == '#') {
        const bool hex = entity[1] == 'x';
        const std::string digits = entity.substr(hex ? 2 : 1);
        char* end = nullptr;
        const unsigned long code = std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
        if (digits.empty() || *end != '\0' || code > 0xFFFF) fail("bad character reference '&" + entity + ";'");
        // UTF-8 encoding of the code point.
        if (code < 0x80)
          out += static_cast<char>(code);
        else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
      } else {
        fail("unknown entity '&" + entity + ";'");
      }
      i = semi;
    }
    return out;
  }

  const std::string& s_;
  const std::string& name_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

std::unique_ptr<XmlElement> parse_xml(const std::string& text, const std::string& name) {
  return Parser(text, name).document();
}

}  // namespace testbed
