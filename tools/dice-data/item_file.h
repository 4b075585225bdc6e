// Files of items that dice-data's commands read (split-infill --items, build-sft --input): a JSON
// array (the text starts with "[", after white space: kernel_infilling_dev.json, a curriculum's
// files) or JSON Lines (one JSON value per line; blank lines skipped). Each item keeps where it
// was read, so that an error can name the file, the line (JSON Lines) and the item.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dice::data {

struct FileItem {
  boost::json::value value;
  std::string at;  // "<where>" for an array's item; "<where>:<line>" for a JSON Lines item
};

struct ItemFile {
  std::vector<FileItem> items;
  bool lines = false;  // read as JSON Lines (else a JSON array)
};

// The items of `text`, read from `where` (a path, for messages). The caller decides what an
// empty file means (`text` holding only white space gives no items, as JSON Lines).
// InvalidArgument "<where>:<line>:<column>: not JSON (why)" for text that is not JSON, and
// "<where>: expected a JSON array of items" for an array file whose value is not one.
Result<ItemFile> read_item_file(std::string_view text, const std::string& where);

// `items` as a JSON array text with one item per line at least (pretty_json.h's text of each,
// indented two spaces), ending in a newline: "[]\n" when empty. pretty_json() alone writes an
// array of flat objects on one line; a file of items is read and diffed item by item.
std::string item_array_text(const std::vector<boost::json::value>& items);

}  // namespace dice::data
