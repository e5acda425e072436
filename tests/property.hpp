// Runs a rapidcheck property inside a Catch2 test case with a fixed seed: the seed and
// rapidcheck's counterexample are printed when it fails (tests use fixed seeds only).
#pragma once

#include <rapidcheck.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <sstream>
#include <utility>

namespace vx::test {

template <class Property>
void check_property(const char* name, uint64_t seed, int max_success, int max_size, Property&& property) {
  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = max_success;
  params.maxSize = max_size;
  rc::detail::TestMetadata meta;
  meta.id = meta.description = name;
  auto result = rc::detail::checkProperty(rc::detail::toProperty(std::forward<Property>(property)), meta, params);
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  INFO("rapidcheck seed " << seed << ": " << msg.str());
  REQUIRE(result.template is<rc::detail::SuccessResult>());
  CHECK(result.template get<rc::detail::SuccessResult>().numSuccess == params.maxSuccess);
}

}  // namespace vx::test
