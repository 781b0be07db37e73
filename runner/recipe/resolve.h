// The recipe's `auto` values and choices resolved for this machine and launch: the device, the
// precision, the memory format, and the process/thread layout.
#pragma once

#include "runner/recipe/job.h"

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace trainrun {

// The CPUs this process may run on (its affinity mask: taskset, cgroups' cpusets, srun's binding).
int64_t usable_cpus();

// world.device: cuda | cpu, `auto` as CUDA's availability says. RecipeError for a missing CUDA.
std::string resolve_device(const std::string& wanted);
// job.precision (and its reason) from the recipe's precision on job.device.
void resolve_precision(Job& job);
// job.channels_last (and its reason) from the recipe's memory_format; makes the 4-D weights NHWC.
void resolve_memory_format(Job& job);
// Fills the `auto` values the typed views need into the validated recipe, so the resolved recipe
// shows what ran: world.nproc_per_node, world.threads_per_proc and data.eval_batch_size (a copy
// of batch_size's value, not the same node: YAML would write an anchor and an alias). Returns
// what it resolved.
std::vector<ResolvedValue> resolve_auto_values(YAML::Node root);

// Writes what the job chose for precision, memory_format, world.device and world.backend into
// job.recipe, so that recipe.resolved.yaml and `check` show no `auto`; returns those that were
// `auto`, with the reason.
std::vector<ResolvedValue> write_resolved_choices(Job& job);

// The resolved recipe as recipe.resolved.yaml and `check` write it: job.recipe, then a comment
// naming each value that was `auto` and why it became what it is.
std::string resolved_recipe_text(const Job& job);

}  // namespace trainrun
