// Activation checkpointing (train.activation_checkpointing), what torch.utils.checkpoint does in
// Python and LibTorch lacks (pytorch#52744): a block's forward runs without keeping its
// activations, only its input; backward runs the block's forward again, with grad, and
// backpropagates through that. Memory falls to the blocks' inputs plus one block's activations;
// the price is a second forward of every checkpointed block.
//
// As torch.utils.checkpoint.checkpoint(block, input, use_reentrant=False), timm's default:
// - the RNG is replayed (preserve_rng_state): the CPU generator, and the input's CUDA device's,
//   are set in the recompute to what they were in forward, then put back, so stochastic depth and
//   dropout draw the same masks twice and the run's random stream is the plain run's;
// - the recompute runs under the autocast state of the forward (precision: bf16 / fp16);
// - the parameters' gradients reach their .grad through the outer backward (the block's
//   parameters are inputs of the recompute node), so DDP's reducer sees each one ready as usual,
//   and a block whose input needs no gradient (a frozen stem) still trains.
// Unlike torch.utils.checkpoint, the recompute leaves the block's buffers as the forward left
// them: BatchNorm's running statistics (and num_batches_tracked) are updated once per step, as
// in the plain run, not a second time by the recompute.
#pragma once

#include "components/models/model.h"

#include <memory>
#include <string>
#include <vector>

namespace trainrun {

// The CheckpointBlock models take (components/models/model.h): `forward` on `input` now, again in
// backward. Under no grad (evaluation), simply forward(input).
at::Tensor checkpoint_block(const std::shared_ptr<torch::nn::Module>& block, BlockForward forward, const at::Tensor& input);

// Turns checkpointing on for `stages` (names from model.checkpoint_stages()); {} turns it off.
void set_activation_checkpointing(Classifier& model, const std::vector<std::string>& stages);

}  // namespace trainrun
