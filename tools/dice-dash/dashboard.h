// Dashboard: what dice-dash answers for each request. The page at "/", its files under
// "/static/<name>", the JSON API under "/api/" (api.h). Read-only: every other method is 405.
//
// With an access token set, every request must carry it: as "Authorization: Bearer <token>", as
// the cookie dice_dash_token (set when the page is opened as /?token=<token>, so the page's own
// requests carry it), or as ?token=<token>. Without it: 401 and a page that says how to pass it.
#pragma once

#include <string>

#include "net/service/http_server.h"
#include "tools/dice-dash/api.h"

namespace dice::dash {

using service::HttpRequest;
using service::HttpResponse;

class Dashboard {
 public:
  // `token` empty: no token needed.
  Dashboard(Api* api, std::string token) : api_(api), token_(std::move(token)) {}

  HttpResponse handle(const HttpRequest& request);

 private:
  bool authorized(const HttpRequest& request) const;

  Api* api_;
  std::string token_;
};

}  // namespace dice::dash
