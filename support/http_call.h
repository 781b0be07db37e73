// One HTTP request with a body and the whole answer in memory: the Hub's JSON APIs and the LFS
// uploads of a push (support/hub_upload.cpp). The body is a string, or a slice of a file read as
// curl sends it (a multi-gigabyte weights file is never held in memory). A transport failure
// (refused, cut, timed out) is a status of 0 with curl's text, for the caller's retry policy.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace trainrun {

struct HttpCall {
  std::string method = "GET";  // GET, POST, PUT
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // sent when `file` is empty
  std::filesystem::path file;        // else: bytes [offset, offset + length) of this file
  std::int64_t offset = 0;
  std::int64_t length = 0;
};

struct HttpAnswer {
  long status = 0;                             // 0: no answer (see `failure`)
  std::string reason;                          // "Not Found"
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string failure;                         // curl's text when status is 0
  std::int64_t sent = 0;                       // body bytes handed to curl
};

// Sends `call`, following no redirect. Never throws for the network: see HttpAnswer::status.
HttpAnswer http_call(const HttpCall& call);

}  // namespace trainrun
