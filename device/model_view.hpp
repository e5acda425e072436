// Test-only: the model behind a Driver from open_model_device, so that a test
// can compare what a debugger reads through the driver with the model's own
// state. The engine and the CLI never use it: they see the device only through
// device/driver.hpp.
#pragma once

#include "device/driver.hpp"
#include "device/machine.hpp"

namespace vx {

// The Machine of a model device; nullptr for any other Driver.
const Machine* model_machine_for_tests(const Driver& d);

}  // namespace vx
