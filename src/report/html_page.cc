#include "paratune/report/html_page.h"

#include <string_view>

namespace paratune {
namespace detail {
std::string web_asset(std::string_view name);  // generated: cmake/embed_web.cmake
}  // namespace detail

std::string escape_markup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string embeddable_json(const nlohmann::ordered_json& data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  // These characters only occur inside JSON strings, where the \u escapes mean the same: the text
  // can then never end the <script> element or open a comment in it.
  for (const char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_page(const std::string& title, const nlohmann::ordered_json& data) {
  return html_page_with_json(title, embeddable_json(data));
}

std::string html_page_with_json(const std::string& title, const std::string& json) {
  std::string page;
  const std::string echarts = detail::web_asset("echarts.js");
  page.reserve(echarts.size() + json.size() + 65536);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" "
          "content=\"paratune\">\n<link rel=\"icon\" href=\"data:,\">\n<title>";
  page += escape_markup(title);
  page += "</title>\n<style>\n";
  page += detail::web_asset("report.css");
  page += "</style>\n</head>\n<body>\n<div id=\"app\"><noscript>This report draws its charts with JavaScript.</noscript></div>\n";
  page += "<script id=\"paratune-data\" type=\"application/json\">";
  page += json;
  page += "</script>\n<script>\n";
  page += echarts;
  page += "\n</script>\n<script>\n";
  page += detail::web_asset("report.js");
  page += "\n</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace paratune
