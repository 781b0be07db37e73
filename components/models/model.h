// What every model is: a torch module from images to class scores, plus the facts a recipe
// needs about it (default normalisation, input size, which parameters form the classifier).
#pragma once

#include "registry/registry.h"
#include "support/safetensors.h"

#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace trainrun {

// timm's pretrained_cfg data keys for the weights `model.pretrained: true` loads: what
// `normalize: {mean: model}` takes, and the eval pipeline `data.eval_transforms: model` builds
// when the weights bring no config.json of their own (timm's resolve_data_config).
struct InputConfig {
  std::vector<double> mean;
  std::vector<double> std;
  std::vector<int64_t> input_size;  // C, H, W
  std::string interpolation = "bilinear";  // of the eval resize
  double crop_pct = 0.875;                 // eval: resize the shorter side to input_size / crop_pct, centre-crop
  // false: the images come at input_size and are evaluated as they are (to_tensor + normalize),
  // as PyTorch's MNIST example evaluates BasicNet.
  bool resize_and_crop = true;
  // timm's fixed_input_size: the model takes input_size only (a ViT's position embedding has one
  // entry per patch), so `eval_transforms: model` crops to it whatever size the weights' own
  // config.json names (theirs when the model is built for another img_size).
  bool fixed_input_size = false;
};

// One entry of timm's group_matcher dict: `group` is the dict key (its ordinal is the order in
// which the group names first appear), `regex` a pattern of it, matched at the start of a
// parameter name; its captured numbers order the layers within the group. `suffix` is the second
// element of timm's (regex, suffix) sub-specs, appended to those numbers: (0,) puts ConvNeXt's
// stages.S.downsample in the layer of stages.S.blocks.0; (99999,) (timm's MATCH_PREV_GROUP) joins
// the layer before, as a final norm joins the last block.
struct GroupRule {
  std::string group;
  std::string regex;
  std::vector<double> suffix = {};
};

// Activation checkpointing (train.activation_checkpointing): runs `forward` (one block of a stage,
// `block` being the module that holds its parameters and buffers) on `input` keeping only the
// input, and recomputes the block's activations in backward, as torch.utils.checkpoint.checkpoint
// (block, input). The runner supplies it (runner/train/activation_checkpointing.h): it replays the
// RNG and autocast state, which are the runner's.
using BlockForward = std::function<at::Tensor(const at::Tensor&)>;
using CheckpointBlock =
    std::function<at::Tensor(const std::shared_ptr<torch::nn::Module>& block, BlockForward forward, const at::Tensor& input)>;

class Classifier : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& x) = 0;
  virtual InputConfig input_config() const = 0;
  // Glob over parameter names that selects the classifier head (for freeze rules, re-init).
  virtual std::string classifier_pattern() const = 0;
  // timm's group_matcher(coarse=False), its rules in order (layer ids for optimizer.layer_decay).
  // Empty: timm's fallback, auto_group_layers (12 parameter tensors per layer, the classifier last).
  virtual std::vector<GroupRule> group_matcher() const { return {}; }
  // Whether forward() returns log-probabilities (BasicNet) rather than logits.
  virtual bool outputs_log_probs() const { return false; }
  // What `model.pretrained: true` loads: the weights published for this architecture, as
  // hf-hub:ORG/NAME (timm's default tag); empty when there are none.
  virtual std::string published_weights() const { return ""; }
  // Rewrites pretrained weights (state_dict names) for this model's configuration before they
  // load, as timm's pretrained_filter_fn (checkpoint_filter_fn): a ViT resamples a pos_embed made
  // for another image size. Returns what it changed, one line each, for the run's notes.
  virtual std::vector<std::string> adapt_pretrained(TensorList& /*tensors*/) const { return {}; }
  // Whether memory_format: auto makes it channels_last: convolutional nets on large images, where
  // oneDNN's NHWC convolutions are faster (resnet50d at 224: 1.3x fp32, 1.8x with bf16, measured).
  virtual bool prefers_channels_last() const { return false; }
  // The stages train.activation_checkpointing may name, by their module names, in forward order
  // (`true` = all of them): what timm's set_grad_checkpointing checkpoints. Empty: none.
  virtual std::vector<std::string> checkpoint_stages() const { return {}; }
  // From now on, forwards with grad enabled run each block of `stages` (names from
  // checkpoint_stages()) through `checkpoint`; an empty list turns it off.
  virtual void set_activation_checkpointing(const std::vector<std::string>& /*stages*/, CheckpointBlock /*checkpoint*/) {}
};

// While one is alive on this thread, the model families build without their weight init (timm's
// trunc_normal_, Kaiming, ...; what the layers' own constructors set stays): for `list models`
// and `describe`, which read a model's parameter count and input config, never its values. Most
// of building a timm model is that init (erfinv over every weight: ~20 s for the 20 models on one
// core). Nothing in trainrun that trains, evaluates or loads builds under one (a test that loads
// every weight into a model may: the values it reads are then the loaded ones).
class WithoutWeightInit {
 public:
  WithoutWeightInit();
  ~WithoutWeightInit();
  WithoutWeightInit(const WithoutWeightInit&) = delete;
  WithoutWeightInit& operator=(const WithoutWeightInit&) = delete;

 private:
  bool before_;
};
// Whether a WithoutWeightInit is alive on this thread (each family's init_weights asks).
bool weight_init_skipped();

template <>
struct Kind<Classifier> {
  static constexpr const char* name = "models";
  static constexpr const char* singular = "model";  // in messages: "unknown model 'x'"
  using Factory = std::function<std::shared_ptr<Classifier>(const Config&)>;
};

}  // namespace trainrun
