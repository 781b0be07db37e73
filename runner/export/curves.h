// The training curves of a run as a PNG (the model card's picture): the training loss and each
// evaluation's loss against the optimizer step, from metrics.jsonl's lines, drawn with OpenCV.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace trainrun {

// PNG bytes of a 800 x 450 plot of `lines`' "loss" (train) and "eval_loss" by "step"; empty when
// the lines hold fewer than two points of either.
std::string training_curves_png(const std::vector<nlohmann::json>& lines);

}  // namespace trainrun
