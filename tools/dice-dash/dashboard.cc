#include "tools/dice-dash/dashboard.h"

#include "tools/dice-dash/web_files.h"

namespace dice::dash {
namespace {

constexpr char kTokenCookie[] = "dice_dash_token";

// Compares without stopping at the first difference, so the time taken does not tell how much of
// a guess was right.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ (i < b.size() ? b[i] : 0);
  return diff == 0;
}

// The value of cookie `name` in a Cookie header ("a=1; b=2"), or "".
std::string cookie_value(const std::string& header, const std::string& name) {
  size_t start = 0;
  while (start < header.size()) {
    size_t end = header.find(';', start);
    if (end == std::string::npos) end = header.size();
    size_t begin = header.find_first_not_of(' ', start);
    if (begin < end && header.compare(begin, name.size() + 1, name + "=") == 0) {
      return header.substr(begin + name.size() + 1, end - begin - name.size() - 1);
    }
    start = end + 1;
  }
  return "";
}

// Text for an HTML page: a request's path is shown back, so it must not become markup.
std::string escape_html(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

HttpResponse html_page(int status, const std::string& title, const std::string& text) {
  HttpResponse response;
  response.status = status;
  response.content_type = "text/html; charset=utf-8";
  response.body = "<!doctype html><meta charset=utf-8><title>dice-dash: " + title +
                  "</title><body style=\"font-family:sans-serif;margin:2em\"><h1>" + title +
                  "</h1><p>" + text + "</p></body>\n";
  return response;
}

HttpResponse file_response(const WebFile& file) {
  HttpResponse response;
  response.content_type = std::string(file.content_type);
  response.body = std::string(file.bytes);
  return response;
}

}  // namespace

bool Dashboard::authorized(const HttpRequest& request) const {
  if (token_.empty()) return true;
  const std::string bearer = "Bearer ";
  if (request.authorization.compare(0, bearer.size(), bearer) == 0 &&
      same_secret(request.authorization.substr(bearer.size()), token_)) {
    return true;
  }
  if (same_secret(cookie_value(request.cookie, kTokenCookie), token_)) return true;
  const auto query = request.query.find("token");
  return query != request.query.end() && same_secret(query->second, token_);
}

HttpResponse Dashboard::handle(const HttpRequest& request) {
  if (request.method != "GET") {
    HttpResponse response = html_page(405, "read-only", "dice-dash answers GET only.");
    response.headers.emplace_back("Allow", "GET");
    return response;
  }
  if (!authorized(request)) {
    return html_page(401, "access token needed",
                     "This dashboard was started with an access token. Open it as "
                     "<code>/?token=TOKEN</code> (the page then keeps it in a cookie), or send "
                     "<code>Authorization: Bearer TOKEN</code>.");
  }
  HttpResponse response;
  if (request.path == "/" || request.path == "/index.html") {
    response = file_response(*find_web_file("index.html"));
    const auto query = request.query.find("token");
    if (!token_.empty() && query != request.query.end()) {
      response.headers.emplace_back("Set-Cookie", std::string(kTokenCookie) + "=" + token_ +
                                                      "; Path=/; HttpOnly; SameSite=Strict");
    }
  } else if (request.path.rfind("/static/", 0) == 0) {
    const WebFile* file = find_web_file(request.path.substr(8));
    if (file == nullptr)
      return html_page(404, "not found", "No file " + escape_html(request.path) + ".");
    response = file_response(*file);
  } else if (request.path.rfind("/api/", 0) == 0) {
    ApiResponse api = api_->handle(request.path, request.query);
    response.status = api.http_status;
    response.content_type = "application/json";
    response.body = boost::json::serialize(api.body) + "\n";
  } else {
    return html_page(404, "not found",
                     "No page " + escape_html(request.path) + "; the dashboard is at /.");
  }
  response.headers.emplace_back("Cache-Control", "no-store");
  return response;
}

}  // namespace dice::dash
