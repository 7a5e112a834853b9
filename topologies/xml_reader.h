// A small strict XML reader (elements, attributes, text; line numbers for error messages).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace testbed {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;  // character data directly inside, entities decoded
  int line = 0;      // where the start tag begins
  std::vector<std::unique_ptr<XmlElement>> children;
};

// Parses a whole document; throws std::invalid_argument("NAME:LINE: message") on malformed
// XML. Processing instructions, comments and DOCTYPE are skipped; no namespaces or CDATA.
std::unique_ptr<XmlElement> parse_xml(const std::string& text, const std::string& name);

}  // namespace testbed
