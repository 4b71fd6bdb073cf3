// The manifests fusor plan --k8s writes; their list and options are public (fusor/capacity.h).
#pragma once
#include <string>
#include <vector>

#include "capacity/capacity_plan.h"
#include "fusor/capacity.h"

namespace fusor::capacity {

// A DNS-1123 name for the model's resources: "fusor-" + the name lowercased, other characters
// turned into '-', at most 63 characters.
std::string k8s_resource_name(const std::string& model_name);

}  // namespace fusor::capacity
