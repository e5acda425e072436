// Each launch's kernel image and its symbols, as gdb keeps a symbol table per shared library: a
// host program can upload several kernels (one after another at the same addresses, or side by
// side), and a stop, a hit's condition and a breakpoint location are read with the symbols of the
// launch's own image.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>

#include "engine/symbols.hpp"
#include "engine/variables.hpp"

namespace vx::debug {

class Images {
 public:
  struct Image {
    std::string name;
    std::optional<engine::Symbols> symbols;      // none: debugged by address
    std::optional<engine::Variables> variables;  // none: no C names
  };
  // Adds an image; returns its index (images never move: pointers into them stay valid).
  size_t add(std::string name, std::optional<engine::Symbols> symbols, std::optional<engine::Variables> variables) {
    images_.push_back(Image{std::move(name), std::move(symbols), std::move(variables)});
    return images_.size() - 1;
  }
  // Launch `launch` (1-based, as stops number them) runs image `image`.
  void set_launch(uint32_t launch, size_t image) { launches_[launch] = image; }
  // The launch's image index, when known.
  std::optional<size_t> image_of(uint32_t launch) const {
    auto it = launches_.find(launch);
    if (it == launches_.end()) return std::nullopt;
    return it->second;
  }
  const Image* for_launch(uint32_t launch) const {
    auto i = image_of(launch);
    return i ? &images_[*i] : nullptr;
  }
  size_t size() const { return images_.size(); }
  const Image& at(size_t i) const { return images_[i]; }

 private:
  std::deque<Image> images_;
  std::map<uint32_t, size_t> launches_;
};

}  // namespace vx::debug
