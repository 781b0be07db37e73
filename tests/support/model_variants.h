// Which registered models the suite's every-model passes take: each family's variants less those
// that differ from a smaller registered variant of the same family only in depth or width (the
// same block, stem and head types at other counts and channels). A pass over these runs the same
// code as over the smaller one, at many times its cost: convnext_base's round trip alone was 77 s
// of a 2-core machine, these variants 400 s of the 500 s of ModelRoundTrip. Every variant,
// these too, is still held to its reference one by one: Timm/TimmModels.* (keys, shapes, seeded
// init, logits on the same weights, layer decay and pretrained config against timm) and
// TorchvisionReference.* (torchvision's ResNets).
#pragma once

#include <set>
#include <string>
#include <vector>

namespace trainrun::test {

inline const std::set<std::string>& depth_or_width_variants() {
  static const std::set<std::string> names = {
      "resnet34",                                 // resnet18's 7x7 stem and BasicBlock, deeper
      "resnet101", "resnet152",                   // resnet50's 7x7 stem and Bottleneck, deeper
      "resnet50d", "resnet101d",                  // resnet26d's deep stem, avg-pool shortcuts and Bottleneck, deeper
      "convnext_small", "convnext_base",          // convnext_tiny's blocks, deeper and wider
      "vit_small_patch16_224", "vit_base_patch16_224",  // vit_tiny's blocks, wider
      "efficientnet_b1", "efficientnet_b2", "efficientnet_b3"};  // efficientnet_b0's stages, deeper and wider
  return names;
}

// The registered names an every-model pass takes, in the registry's order.
inline std::vector<std::string> every_model_pass(const std::vector<std::string>& registered) {
  std::vector<std::string> out;
  for (const auto& name : registered)
    if (!depth_or_width_variants().count(name)) out.push_back(name);
  return out;
}

}  // namespace trainrun::test
